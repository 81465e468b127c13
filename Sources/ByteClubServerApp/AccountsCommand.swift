import ArgumentParser
import ByteClubServer
import Foundation

/// `byteclub-server accounts …`: the club's members, managed on the data directory's database
/// directly; safe while a server runs on it (SQLite WAL), which sees each change at once.
struct AccountsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accounts",
        abstract: "Add, list and revoke the members of the club (the development account's shared folder).",
        subcommands: [Add.self, List.self, Revoke.self, Token.self])

    /// `--data-dir`, as the server takes it (flag, then BYTECLUB_DATA_DIR, then the default).
    struct DataDirectory: ParsableArguments {
        @Option(name: .customLong("data-dir"), help: "Directory of the server's database and files.") var dataDir: String?

        var path: String {
            dataDir ?? ProcessInfo.processInfo.environment["BYTECLUB_DATA_DIR"] ?? ByteClubConfiguration.defaultDataDirectory()
        }
    }

    /// An account's name and the data directory it lives in.
    struct NamedAccount: ParsableArguments {
        @Argument(help: "The account's name (letters, digits, '.', '_', '-'); shown as the files' modifier.") var name: String
        @OptionGroup var data: DataDirectory

        func accounts(createIfMissing: Bool = false) throws -> ByteClubAccounts {
            try ByteClubAccounts(dataDirectory: data.path, createIfMissing: createIfMissing)
        }
    }

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a member of the club and print its credentials (the token is shown only now).")
        @OptionGroup var account: NamedAccount

        func run() throws {
            let member = try account.accounts(createIfMissing: true).add(name: account.name)
            say("Created the account \(member.name) in the club. Its credentials:")
            say(credentialLines(appKey: member.appKey, appSecret: member.appSecret, accessToken: member.accessToken, clientID: member.clientID))
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the accounts: name, created, namespace, tokens (never their values).")
        @OptionGroup var data: DataDirectory

        func run() throws {
            let accounts = try ByteClubAccounts(dataDirectory: data.path)
            let formatter = ISO8601DateFormatter()
            say("NAME\tCREATED\tNAMESPACE\tTOKENS")
            for account in try accounts.list() {
                let tokens = "\(account.activeTokens) active, \(account.revokedTokens) revoked"
                say("\(account.name)\t\(formatter.string(from: account.created))\t\(account.namespace)\t\(tokens)"
                    + (account.isDevelopment ? "\t(development account)" : ""))
            }
        }
    }

    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke every token of an account: its requests get 401 saying so, at once.")
        @OptionGroup var account: NamedAccount

        func run() throws {
            let count = try account.accounts().revoke(name: account.name)
            say("Revoked \(count) token\(count == 1 ? "" : "s") of \(account.name)")
        }
    }

    struct Token: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Issue a fresh access token for an account and print it (shown only now).")
        @OptionGroup var account: NamedAccount

        func run() throws {
            let token = try account.accounts().issueToken(name: account.name)
            say("BYTECLUB_ACCESS_TOKEN=\(token)")
        }
    }
}
