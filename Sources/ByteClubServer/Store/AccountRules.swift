import Crypto
import Foundation

extension AccessToken {
    /// Where a token came from, as stored in `origin`.
    enum Origin {
        /// The development account's first token (`--dev-access-token` or random).
        static let development = "development"
        /// Issued by `byteclub-server accounts add` or `accounts token`.
        static let admin = "admin"
        /// Issued at `/oauth2/token` for an authorization code (a member signing in in a browser).
        static let oauth = "oauth"
    }

    /// The stored form of a token: its SHA-256, in hex. Tokens are random (not passwords), so an
    /// unsalted digest is enough to keep a copy of the database from signing anyone in.
    static func digest(_ token: String) -> String {
        SHA256.hash(data: Data(token.utf8)).map { String(format: "%02x", $0) }.joined()
    }
}

/// Which account names are accepted: they show in metadata (`modifier`) and in the names of
/// conflicted copies, so no slashes, spaces or control characters.
enum AccountNames {
    static func check(_ name: String) throws(AccountError) {
        guard (1...64).contains(name.count) else { throw AccountError("An account name has 1 to 64 characters") }
        guard !name.hasPrefix("-"), !name.hasPrefix("."),
              name.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) || "._-".unicodeScalars.contains($0) })
        else {
            throw AccountError("An account name has letters, digits, '.', '_' and '-' only, and does not start with '-' or '.'")
        }
    }
}

/// The credentials a new account gets, the same whichever database stores them: the
/// development account's from `--dev-…` (random where not given), a member's from its club.
struct NewAccount {
    var name: String
    var appKey: String
    var appSecret: String
    var clientID: String
    /// The development account's first token, kept in clear to print at every start.
    var devToken: String?
    /// The token to issue (its digest is stored).
    var token: String
    var origin: String

    static func development(_ wanted: DevCredentials) -> NewAccount {
        let token = wanted.accessToken ?? ServerState.randomToken(24)
        return NewAccount(
            name: Account.developmentName, appKey: wanted.appKey ?? ServerState.randomToken(8), appSecret: ServerState.randomToken(8),
            clientID: wanted.clientID ?? ServerState.randomToken(8), devToken: token, token: token, origin: AccessToken.Origin.development)
    }

    /// A member of `dev`'s club: its app key and secret, a Client-ID and token of its own.
    static func member(_ name: String, of dev: Account) -> NewAccount {
        NewAccount(name: name, appKey: dev.appKey, appSecret: dev.appSecret, clientID: ServerState.randomToken(8),
                   devToken: nil, token: ServerState.randomToken(24), origin: AccessToken.Origin.admin)
    }
}
