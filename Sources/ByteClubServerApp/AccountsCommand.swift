import ArgumentParser
import ByteClubServer
import Foundation
import Logging

/// `byteclub-server accounts …`: the club's members, managed on the servers' database directly
/// (the data directory's SQLite file, or `--database-url`'s PostgreSQL); safe while servers run
/// on it, which see each change at once.
struct AccountsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accounts",
        abstract: "Add, list and revoke the members of the club (the development account's shared folder).",
        subcommands: [Add.self, List.self, Revoke.self, Token.self])

    /// `--data-dir` and `--database-url`, as the server takes them (flag, then
    /// BYTECLUB_DATA_DIR / BYTECLUB_DATABASE_URL, then the default data directory).
    struct DataDirectory: ParsableArguments {
        @Option(name: .customLong("data-dir"), help: "Directory of the server's database and files.") var dataDir: String?
        @Option(name: .customLong("database-url"), help: "The servers' PostgreSQL database (postgres://user:password@host:port/db) instead of --data-dir's SQLite.")
        var databaseURL: String?

        var path: String {
            dataDir ?? ProcessInfo.processInfo.environment["BYTECLUB_DATA_DIR"] ?? ByteClubConfiguration.defaultDataDirectory()
        }

        /// The PostgreSQL database to use, if any.
        var url: String? {
            databaseURL ?? ProcessInfo.processInfo.environment["BYTECLUB_DATABASE_URL"]
        }

        /// Opens the accounts; `createIfMissing` makes a data directory that has no database yet.
        func accounts(createIfMissing: Bool = false) async throws -> ByteClubAccounts {
            if let url { return try await ByteClubAccounts(databaseURL: url, logger: quietLogger()) }
            return try await ByteClubAccounts(dataDirectory: path, createIfMissing: createIfMissing)
        }

        /// Opens the OAuth clients, on the same database as ``accounts(createIfMissing:)``.
        func clients() async throws -> ByteClubClients {
            if let url { return try await ByteClubClients(databaseURL: url, logger: quietLogger()) }
            return try await ByteClubClients(dataDirectory: path)
        }

        /// Runs `body` on the opened accounts and closes them afterwards, also when it throws.
        func with<T>(createIfMissing: Bool = false, _ body: (ByteClubAccounts) async throws -> T) async throws -> T {
            let accounts = try await accounts(createIfMissing: createIfMissing)
            return try await closing({ await accounts.close() }) { try await body(accounts) }
        }

        /// Runs `body` on the opened clients and closes them afterwards, also when it throws.
        func withClients<T>(_ body: (ByteClubClients) async throws -> T) async throws -> T {
            let clients = try await clients()
            return try await closing({ await clients.close() }) { try await body(clients) }
        }

        private func closing<T>(_ close: () async -> Void, _ body: () async throws -> T) async throws -> T {
            do {
                let result = try await body()
                await close()
                return result
            } catch {
                await close()
                throw error
            }
        }
    }

    /// An account's name and the database it lives in.
    struct NamedAccount: ParsableArguments {
        @Argument(help: "The account's name (letters, digits, '.', '_', '-'); shown as the files' modifier.") var name: String
        @OptionGroup var data: DataDirectory
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a member of the club and print its credentials (the token is shown only now).")
        @OptionGroup var account: NamedAccount

        func run() async throws {
            let member = try await account.data.with(createIfMissing: true) { try await $0.add(name: account.name) }
            say("Created the account \(member.name) in the club. Its credentials:")
            say(credentialLines(appKey: member.appKey, appSecret: member.appSecret, accessToken: member.accessToken, clientID: member.clientID))
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the accounts: name, created, namespace, tokens (never their values).")
        @OptionGroup var data: DataDirectory

        func run() async throws {
            let accounts = try await data.with { try await $0.list() }
            let formatter = ISO8601DateFormatter()
            say("NAME\tCREATED\tNAMESPACE\tTOKENS")
            for account in accounts {
                let tokens = "\(account.activeTokens) active, \(account.revokedTokens) revoked"
                say("\(account.name)\t\(formatter.string(from: account.created))\t\(account.namespace)\t\(tokens)"
                    + (account.isDevelopment ? "\t(development account)" : ""))
            }
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke every token of an account: its requests get 401 saying so, at once.")
        @OptionGroup var account: NamedAccount

        func run() async throws {
            let count = try await account.data.with { try await $0.revoke(name: account.name) }
            say("Revoked \(count) token\(count == 1 ? "" : "s") of \(account.name)")
        }
    }

    struct Token: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Issue a fresh access token for an account and print it (shown only now).")
        @OptionGroup var account: NamedAccount

        func run() async throws {
            let token = try await account.data.with { try await $0.issueToken(name: account.name) }
            say("BYTECLUB_ACCESS_TOKEN=\(token)")
        }
    }
}

/// The subcommands print their results; the database's own logs only say something at warning.
func quietLogger() -> Logger {
    var logger = Logger(label: "byteclub-accounts")
    logger.logLevel = .warning
    return logger
}
