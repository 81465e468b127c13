import Foundation

/// The executables this build made (`ferry`, `ferryd`, `byteclub-server`, the example apps),
/// for tests that run them as a user would.
///
/// A test target that runs one depends on its executable target in Package.swift, so that
/// `swift build --build-tests` and `swift test` build it into the products folder
/// (`.build/debug`), where the test runner lives too. `<NAME>_BINARY` (the name in capitals,
/// `-` as `_`: `FERRYD_BINARY`, `BYTECLUB_SERVER_BINARY`) runs another build instead.
///
/// ```swift
/// let ferryd = try BuiltProducts.path(of: "ferryd")   // …/.build/debug/ferryd
/// let process = Process()
/// process.executableURL = URL(fileURLWithPath: ferryd)
/// ```
public enum BuiltProducts {
    /// The path of the executable `name`; throws ``BuiltProductMissing``, naming the folders
    /// looked in, when it was not built.
    public static func path(of name: String) throws -> String {
        let variable = name.uppercased().replacingOccurrences(of: "-", with: "_") + "_BINARY"
        if let explicit = ProcessInfo.processInfo.environment[variable] {
            guard FileManager.default.isExecutableFile(atPath: explicit) else {
                throw BuiltProductMissing(name: name, searched: [], override: "\(variable)=\(explicit)")
            }
            return explicit
        }
        let folders = candidateFolders()
        for folder in folders {
            let candidate = (folder as NSString).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw BuiltProductMissing(name: name, searched: folders, override: nil)
    }

    /// The folder holding the executable `name` (and, in a normal build, all the others).
    public static func folder(of name: String) throws -> String {
        (try path(of: name) as NSString).deletingLastPathComponent
    }

    /// Where the products may be: the test runner's folder or, for a runner inside an
    /// `.xctest` bundle (`X.xctest/Contents/MacOS/X`), the folder that holds the bundle.
    private static func candidateFolders() -> [String] {
        let runner = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var folders: [String] = []
        for start in [URL(fileURLWithPath: runner).deletingLastPathComponent(), Bundle.main.bundleURL] {
            var folder = start.standardizedFileURL
            if let bundle = folder.pathComponents.lastIndex(where: { $0.hasSuffix(".xctest") }) {
                folder = URL(fileURLWithPath: NSString.path(withComponents: Array(folder.pathComponents[..<bundle])))
            }
            if !folders.contains(folder.path) { folders.append(folder.path) }
        }
        return folders
    }
}

/// An executable a test runs was not built (or `<NAME>_BINARY` names no executable).
public struct BuiltProductMissing: Error, CustomStringConvertible {
    public var name: String
    public var searched: [String]
    /// `FERRYD_BINARY=…`, when that was set.
    public var override: String?
    public var description: String {
        if let override { return "the executable \(name) was not found: \(override) names no executable file" }
        return "the executable \(name) was not found among the build products (looked in \(searched.joined(separator: ", "))); "
            + "build it with `swift build --build-tests`, and make the test target depend on the target that makes it"
    }
}
