import FerryCore
import ArgumentParser
import Ferry
import FerryEngine
import FerryNetwork
import Foundation

/// Checks shared by the subcommands' `validate()`.
enum Check {
    /// An absolute http(s) URL with a host, or a `ValidationError` that explains.
    static func url(_ text: String, what: String = "URL") throws -> URL {
        // Redacted only for a message: parsing it again costs as much as the check (`--many`).
        func shown() -> String { Redact.url(text) }
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased() else {
            throw ValidationError("'\(shown())' is not a valid \(what): expected http://host/path or https://host/path")
        }
        guard scheme == "http" || scheme == "https" else {
            throw ValidationError("'\(shown())' is not a valid \(what): the scheme must be http or https, not \(scheme)")
        }
        guard let host = url.host, !host.isEmpty else {
            throw ValidationError("'\(shown())' is not a valid \(what): it has no host")
        }
        return url
    }

    /// `Name: value` lines as header fields. Values are never echoed back.
    static func headers(_ lines: [String]) throws -> HeaderFields {
        var fields = HeaderFields()
        let token = CharacterSet(charactersIn: "!#$%&'*+-.^_`|~").union(.alphanumerics)
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else {
                throw ValidationError("header '\(line.prefix(40))' must look like 'Name: value'")
            }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty, name.unicodeScalars.allSatisfy({ token.contains($0) && $0.isASCII }) else {
                throw ValidationError("header name '\(name.prefix(40))' is not a valid HTTP field name")
            }
            guard !value.contains("\r"), !value.contains("\n") else {
                throw ValidationError("the value of header '\(name)' contains a line break")
            }
            fields.add(name: name, value: value)
        }
        return fields
    }

    static func sha256(_ hex: String) throws -> String {
        let lower = hex.lowercased()
        guard lower.count == 64, lower.allSatisfy({ $0.isHexDigit }) else {
            throw ValidationError("--sha256 must be 64 hexadecimal digits (got \(hex.count) characters)")
        }
        return lower
    }

    /// The file name a URL suggests: its last path component, or `index.html`.
    static func defaultFileName(for url: URL) -> String {
        // Decoded, but never a path: `..%2F..%2Fetc%2Fpasswd` decodes to `../../etc/passwd`,
        // so a "/" (or NUL) from the URL becomes "_" and the file stays where it was asked.
        let decoded = url.lastPathComponent
        if decoded.isEmpty || decoded == "/" || decoded == "." || decoded == ".." { return "index.html" }
        return String(decoded.map { $0 == "/" || $0 == "\0" ? "_" : $0 })
    }
}

/// Options every transfer takes.
struct TransferOptions: ParsableArguments {
    @Option(name: [.customShort("H"), .customLong("header")], help: ArgumentHelp("Add a request header (repeatable).", valueName: "Name: value"))
    var headers: [String] = []

    @Option(help: ArgumentHelp("Fail when no byte moves for this many seconds.", valueName: "seconds"))
    var timeout: Double = 60

    @Option(name: .customLong("max-time"), help: ArgumentHelp("Fail when the whole transfer takes longer.", valueName: "seconds"))
    var maxTime: Double?

    @Option(help: "Retry lost connections, time-outs and 429/503 up to N times (downloads continue where they stopped).")
    var retries: Int = 0

    @Flag(help: "With no network that may be used, wait for one (within --max-time) instead of failing (URLSession's waitsForConnectivity).")
    var waitForNetwork = false

    @Flag(help: "Do not use expensive (metered) links (allowsExpensiveNetworkAccess = false; docs/ferryd.md, \"Network\").")
    var noExpensiveNetwork = false

    @Flag(help: "Do not use constrained links (allowsConstrainedNetworkAccess = false).")
    var noConstrainedNetwork = false

    @Flag(help: "Do not use cellular links (allowsCellularAccess = false).")
    var noCellular = false

    @Flag(help: "Print one JSON object on standard output at the end (also on failure).")
    var json = false

    @Flag(name: [.short, .long], help: "No progress bar and no notes; errors are still printed.")
    var quiet = false

    func validate() throws {
        _ = try Check.headers(headers)
        guard timeout > 0, timeout <= 86_400 else { throw ValidationError("--timeout must be between 0 and 86400 seconds") }
        if let maxTime, maxTime <= 0 { throw ValidationError("--max-time must be positive") }
        guard (0...100).contains(retries) else { throw ValidationError("--retries must be between 0 and 100") }
    }

    var retryPolicy: RetryPolicy {
        retries == 0 ? .none : RetryPolicy(maximumAttempts: retries + 1, initialDelay: .milliseconds(500), maximumDelay: .seconds(10))
    }

    func engineConfiguration(connections: Int = 6) -> EngineConfiguration {
        var configuration = EngineConfiguration()
        configuration.idleTimeout = timeout
        configuration.maximumConnectionsPerHost = connections
        return configuration
    }

    /// What the network options ask before a transfer connects (nil: nothing, the default).
    var connectivity: ConnectivityRequirement? { ConnectivityRequirement(access: networkAccess) }

    /// The network options as a session's settings (the one place the flags are read).
    var networkAccess: NetworkAccess {
        NetworkAccess(
            waitsForConnectivity: waitForNetwork, allowsExpensiveNetworkAccess: !noExpensiveNetwork,
            allowsConstrainedNetworkAccess: !noConstrainedNetwork, allowsCellularAccess: !noCellular)
    }

    /// Notes for the user (suppressed by --quiet).
    func note(_ text: String) {
        if !quiet { Console.error("ferry: \(text)") }
    }
}

/// Runs `transfer` on an engine of its own, shut down afterwards; Ctrl-C cancels it (the
/// result is then a `.cancelled` failure, not a thrown error, so the caller still reports
/// what was moved).
/// With `options`' network settings, the transfer first waits for (or fails without) a network
/// it may use, as a session's task does.
func runInterruptibly(_ transfer: Transfer, observer: CLIObserver, options: TransferOptions, connections: Int = 6) async throws -> Result<TransferResult, FerryError> {
    let engine = try TransferEngine(configuration: options.engineConfiguration(connections: connections))
    let handle = RunHandle()  // stops the work when the transfer's link goes
    let work = Task { () -> Result<TransferResult, FerryError> in
        do {
            guard let connectivity = options.connectivity else { return .success(try await engine.run(transfer, observer: observer)) }
            let admitted = try await connectivity.admit(transfer) { reason in options.note("waiting for the network: \(reason.message)") }
            return .success(try await connectivity.following(admitted, stop: { handle.stop() }) { try await engine.run(admitted, observer: observer) })
        } catch {
            return .failure(FerryError.from(error, url: transfer.request.url))
        }
    }
    handle.attach(work)
    let interrupts = Interrupts { work.cancel() }
    let outcome = await work.value
    interrupts.remove()
    try? await engine.shutdown()
    return outcome
}
