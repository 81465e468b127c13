import Foundation

// What byteclub-server keeps besides the blobs, as the routes see it: a few protocols named
// by what they hold, each implemented by SQLiteStore (embedded, the default) and PostgresStore
// (`--database-url`, shared by several server instances). The routes talk only to these.
//
// The rules every implementation keeps:
// - A tree write (put, folder, delete, move) is one transaction that also appends its journal
//   rows; of two writes to one namespace, one sees the other's commit (SQLite: one writer;
//   PostgreSQL: the namespace row locked first), so a `parent_rev` compared is the rev replaced.
// - Nothing is cached across requests: another process's write (a second server, the
//   `accounts` command) counts from the next request on.
// - Blob names are written only after their files are durable (``BlobStore``).
// - A consent's token and an authorization code work once, across instances too (``OAuthStore``).

/// Each namespace's tree of files and folders (Dropbox v1's files API).
protocol FileTreeStore: Sendable {
    func entry(_ namespace: Int64, _ path: DropboxPath) async throws -> Entry?
    /// The entries directly in `path`, in path order.
    func children(_ namespace: Int64, _ path: DropboxPath) async throws -> [Entry]
    /// Entries under `path` (not `path` itself) whose names contain every word of `query`.
    func search(_ namespace: Int64, under path: DropboxPath, query: String, limit: Int) async throws -> [Entry]
    /// The namespace's files (not folders), in path order: the web page's notes and photos.
    func files(_ namespace: Int64, limit: Int) async throws -> [Entry]
    /// Puts a durable blob at `path` (creating missing parent folders), resolving conflicts by
    /// `mode` (see ``WriteMode``). Returns the new entry and the blob it replaced, which the
    /// caller deletes.
    func putFile(author: Account, path: DropboxPath, blob: String, bytes: Int64, mode: WriteMode, quota: Int64) async throws -> (Entry, replaced: String?)
    /// `fileops/create_folder`: 403 when something is already there.
    func createFolder(author: Account, path: DropboxPath) async throws -> Entry
    /// `fileops/delete`: the entry and everything under it; the blobs to remove afterwards.
    func delete(author: Account, path: DropboxPath) async throws -> (Entry, blobs: [String])
    /// `fileops/move`: renames an entry and everything under it.
    func move(author: Account, from: DropboxPath, to: DropboxPath) async throws -> Entry
    /// Bytes the namespace stores: its files and the images its members uploaded (the quota's measure).
    func usedBytes(namespace: Int64) async throws -> Int64
}

/// The change journal behind `/1/delta` and `/1/longpoll_delta`: a row per changed path,
/// numbered by a sequence per namespace, written in the transaction that changed the entry.
protocol ChangeJournalStore: Sendable {
    /// Wakes this process's long-poll waiters when a tree write of this store commits; other
    /// processes' writes are found by the waiters' re-reads of ``head(_:)``.
    var changes: ChangeNotifier { get }
    /// The last sequence written in `namespace` (0 before any change).
    func head(_ namespace: Int64) async throws -> Int64
    /// One page of delta: the paths of at most `limit` journal rows after `after` (those at or
    /// under `prefix`), each with its entry now (`nil`: gone), in path order.
    func delta(_ namespace: Int64, after: Int64, prefix: DropboxPath, limit: Int) async throws -> DeltaPage
}

/// Accounts, the namespaces they share, and their access tokens (stored as SHA-256 digests).
protocol AccountStore: Sendable {
    /// The account a presented token signs in, or why none.
    func lookup(token: String) async throws -> TokenLookup
    /// The account an images-API `Client-ID` belongs to.
    func account(clientID: String) async throws -> Account?
    /// The development account, created on first use with `wanted`'s credentials (random where
    /// `nil`) in a new namespace, "the club". Returns it, whether this call created it, and
    /// whether its first token (the one kept to print) is still valid.
    func ensureDevAccount(wanted: DevCredentials) async throws -> (Account, created: Bool, tokenActive: Bool)
    /// A new member of the club (the development account's namespace and app), with a fresh
    /// token and Client-ID. Creates the development account first if there is none yet.
    func addMember(name: String) async throws -> (Account, token: String)
    /// A new token for `name` (its other tokens stay as they are).
    func issueToken(name: String) async throws -> String
    /// Revokes every valid token of `name`; returns how many.
    func revokeTokens(name: String) async throws -> Int
    /// Every account with its namespace's name and its tokens counted, oldest first.
    func accountSummaries() async throws -> [AccountSummary]
}

/// Images uploaded through the Imgur-style API, and Dropbox's chunked uploads in progress.
protocol UploadStore: Sendable {
    func insertImage(_ record: ImageRecord) async throws
    func image(id: String) async throws -> ImageRecord?
    /// Removes the image with deletehash `key`, or with id `key` if `account` owns it; the removed record.
    func deleteImage(key: String, account: Int64) async throws -> ImageRecord?
    /// The account's images, newest first.
    func images(account: Int64, limit: Int) async throws -> [ImageRecord]
    func createChunkedUpload(id: String, account: Int64, expires: Double) async throws
    /// The acknowledged offset and expiry of the account's upload `id`, if there is one.
    func chunkedUpload(id: String, account: Int64) async throws -> (offset: Int64, expires: Double)?
    func setChunkedUploadOffset(id: String, offset: Int64) async throws
    func removeChunkedUpload(id: String) async throws
}

/// Request bins and the requests they recorded.
protocol BinStore: Sendable {
    func createBin(id: String, created: Double) async throws
    func binExists(_ id: String) async throws -> Bool
    /// Records `request`, keeping the bin's newest `keep` requests; the new request's id.
    func record(_ request: BinRequest, keep: Int) async throws -> Int64
    /// The bin's requests, newest first.
    func requests(bin: String) async throws -> [BinRequest]
    /// The newest bins with how many requests each holds.
    func binSummaries(limit: Int) async throws -> [BinSummary]
}

/// All the server keeps but the blobs: what ``ServerState`` holds, opened by ``StoreLocation``.
protocol MetadataStore: FileTreeStore, ChangeJournalStore, AccountStore, OAuthStore, UploadStore, BinStore {
    /// Every blob name a row points to (files and images), for the start-up cleaning of orphans.
    func referencedBlobs() async throws -> Set<String>
    /// Closes the connections (PostgreSQL: ends the pool's task); the store is unusable after.
    func close() async
}

/// What a presented token turned out to be.
enum TokenLookup: Sendable {
    case valid(Account)
    case revoked
    case unknown
}

/// One answer of ``ChangeJournalStore/delta(_:after:prefix:limit:)``.
struct DeltaPage: Sendable {
    struct Item: Sendable {
        let pathLower: String
        let entry: Entry?
    }

    let items: [Item]
    /// The sequence the next call continues after.
    let cursor: Int64
    let hasMore: Bool
}

/// A bin on the web page.
struct BinSummary: Sendable {
    let id: String
    let count: Int
}

/// What a journal row records (for reading the table; delta looks at the entry itself).
enum ChangeKind: String, Sendable {
    case put, delete, move
    case createFolder = "create_folder"
}
