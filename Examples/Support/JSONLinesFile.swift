import FerryCore
public import Foundation

/// A history kept as one JSON object per line, appended by whichever process (app or
/// extension) has something to record. Each record goes out in a single `write` on an
/// `O_APPEND` descriptor, so two processes appending at once never interleave a line.
///
/// ```swift
/// let log = JSONLinesFile<Post>(url: container.appendingPathComponent("history.jsonl"))
/// try log.append(Post(task: 3, text: "Highland Cow"))
/// let posts = try log.read()
/// ```
public struct JSONLinesFile<Record: Codable>: Sendable {
    public let url: URL

    public init(url: URL) {
        self.url = url
    }

    public func append(_ record: Record) throws {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var line = try encoder.encode(record)
        line.append(0x0A)
        let descriptor = open(url.path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw ExampleError("cannot open \(url.path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        let written = line.withUnsafeBytes { write(descriptor, $0.baseAddress!, $0.count) }
        guard written == line.count else { throw ExampleError("cannot write \(url.path): \(String(cString: strerror(errno)))") }
    }

    /// Every record, oldest first; a missing file is an empty history. A damaged line is skipped
    /// (a crash cannot leave one, but a person editing the file can).
    public func read() throws -> [Record] {
        guard let data = FileManager.default.contents(atPath: url.path) else { return [] }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return data.split(separator: 0x0A).compactMap { try? decoder.decode(Record.self, from: Data($0)) }
    }
}

/// A small settings document in the app group's container, written atomically.
///
/// ```swift
/// try SettingsFile<ShareAlikeSettings>(url: url).save(ShareAlikeSettings(binURL: bin))
/// ```
public struct SettingsFile<Settings: Codable>: Sendable {
    public let url: URL
    /// For secrets: the file is created 0600 in a 0700 folder, never readable by others even briefly.
    public let ownerOnly: Bool

    public init(url: URL, ownerOnly: Bool = false) {
        self.url = url
        self.ownerOnly = ownerOnly
    }

    public func load() throws -> Settings? {
        guard let data = FileManager.default.contents(atPath: url.path) else { return nil }
        do { return try JSONDecoder().decode(Settings.self, from: data) } catch {
            throw ExampleError("\(url.path) is damaged (\(error)); run setup again")
        }
    }

    public func save(_ settings: Settings) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        let data = try encoder.encode(settings)
        guard ownerOnly else { return try data.write(to: url, options: .atomic) }
        do {
            try PrivateFile.replace(url, with: data)
        } catch let error as PrivateFile.WriteError {
            throw ExampleError(error.description)
        }
    }
}

/// An example app's error: a sentence for the person running it.
public struct ExampleError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Where this program's siblings are (`ferry` next to `sharealike` in the build folder).
public func siblingProgram(_ name: String) -> String {
    let me = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    let sibling = ((me as NSString).deletingLastPathComponent as NSString).appendingPathComponent(name)
    return FileManager.default.isExecutableFile(atPath: sibling) ? sibling : name
}

/// Runs `program` with `arguments`, this terminal and environment, and returns its exit status.
public func runProgram(_ program: String, _ arguments: [String]) throws -> Int32 {
    let process = Process()
    if program.contains("/") {
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
    } else {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [program] + arguments
    }
    try process.run()
    process.waitUntilExit()
    return process.terminationStatus
}
