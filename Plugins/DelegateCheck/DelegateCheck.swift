import Foundation
import PackagePlugin

/// Warns about delegate methods that nearly match a requirement of Ferry's URLSession
/// delegate protocols (a wrong label or type) and so are never called: the mistake Swift
/// itself lets pass silently when the conformance is declared in the class's own body.
///
/// Add it to the targets that hold delegates:
///
/// ```swift
/// .target(name: "Uploads", dependencies: [.product(name: "Ferry", package: "Ferry")],
///         plugins: [.plugin(name: "DelegateCheck", package: "Ferry")])
/// ```
///
/// The check is `ferry-delegate-check`, run as a build command on the target's Swift files
/// and Ferry's `URLSessionDelegate.swift` (the requirements) whenever one of them changes; its
/// `file:line:column: warning: …` lines appear in `swift build`'s output. (A plugin's own
/// `Diagnostics.warning(_:file:line:)` would not do: SwiftPM 6.3 prints it without the file
/// and line.) docs/porting.md, "Near misses".
@main
struct DelegateCheck: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) async throws -> [Command] {
        guard let target = target as? SourceModuleTarget else { return [] }
        let sources = target.sourceFiles(withSuffix: "swift").map(\.url)
        guard !sources.isEmpty else { return [] }
        guard let protocols = Self.protocolsFile(from: context.package) else {
            throw DelegateCheckError(message: "DelegateCheck: cannot find Ferry's Sources/Ferry/URLSession/URLSessionDelegate.swift")
        }
        // The build needs an output to know when to run the command again: a Swift file
        // holding a comment, compiled into the target as nothing.
        let stamp = context.pluginWorkDirectoryURL.appending(path: "DelegateCheck.swift")
        return [
            .buildCommand(
                displayName: "Checking \(target.name)'s delegate methods",
                executable: try context.tool(named: "FerryDelegateCheck").url,
                arguments: ["--protocols", protocols.path, "--stamp", stamp.path] + sources.map(\.path),
                inputFiles: sources + [protocols],
                outputFiles: [stamp]
            ),
        ]
    }

    /// Ferry's `URLSessionDelegate.swift`, in the package of the graph that holds this
    /// plugin's tool (Ferry, under whatever name it was added).
    static func protocolsFile(from root: Package) -> URL? {
        var seen: Set<Package.ID> = []
        var packages = [root]
        while let package = packages.popLast() {
            guard seen.insert(package.id).inserted else { continue }
            if package.targets.contains(where: { $0.name == "FerryDelegateCheck" }) {
                let file = package.directoryURL.appending(path: "Sources/Ferry/URLSession/URLSessionDelegate.swift")
                return FileManager.default.fileExists(atPath: file.path) ? file : nil
            }
            packages += package.dependencies.map(\.package)
        }
        return nil
    }
}

/// Why the plugin could not make its command.
struct DelegateCheckError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
