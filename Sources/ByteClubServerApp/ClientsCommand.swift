import ArgumentParser
import ByteClubServer
import Foundation

/// `byteclub-server clients …`: the OAuth clients whose members may sign in through
/// `/oauth2/authorize`, on the servers' database (the data directory's SQLite file, or
/// `--database-url`'s PostgreSQL); safe while servers run on it.
struct ClientsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clients",
        abstract: "Register and list the OAuth clients (apps) members may sign in to with a browser.",
        discussion: "The Byte Club app (client id `byteclub`, loopback redirects) is registered already.",
        subcommands: [Add.self, List.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register a public client with its redirect URIs, or add redirect URIs to one.")
        @Argument(help: "The client_id (letters, digits, '.', '_', '-').") var id: String
        @Option(help: "The name members see on the approve page (default: the id).") var name: String?
        @Option(name: .customLong("redirect"), parsing: .upToNextOption,
                help: "Redirect URIs; http://127.0.0.1/… and http://[::1]/… match on any port.") var redirects: [String] = []
        @OptionGroup var data: AccountsCommand.DataDirectory

        func run() async throws {
            let client = try await data.withClients { try await $0.add(id: id, name: name, redirectURIs: redirects) }
            say("Client \(client.id) (\(client.name)) redirects to:")
            for uri in client.redirectURIs { say("  \(uri)") }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the clients: id, name, registered, redirect URIs.")
        @OptionGroup var data: AccountsCommand.DataDirectory

        func run() async throws {
            let clients = try await data.withClients { try await $0.list() }
            let formatter = ISO8601DateFormatter()
            say("ID\tNAME\tREGISTERED\tREDIRECT URIS")
            for client in clients {
                say("\(client.id)\t\(client.name)\t\(formatter.string(from: client.created))\t\(client.redirectURIs.joined(separator: " "))")
            }
        }
    }
}
