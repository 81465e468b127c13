import Foundation

/// `ferry-delegate-check [--protocols FILE] [--stamp FILE] PATH…`: prints a
/// `file:line:column: warning: …` for every method in the Swift files given (or under the
/// folders given) that nearly matches a requirement of Ferry's URLSession delegate protocols,
/// and so will never be called.
///
/// The `DelegateCheck` build tool plugin runs it on a target's sources, so the warnings show
/// in `swift build`'s output beside the compiler's. `--protocols` is Ferry's
/// `URLSessionDelegate.swift`, which it reads the requirements from (by default found from
/// the current folder: see ``DelegateRequirements/protocolsFile(from:)``). `--stamp` names a
/// Swift file it writes (a comment only) for the build to know the check ran. Exits 0 with
/// warnings, 1 when a file cannot be read or holds no delegate protocols, 2 for a wrong
/// command line.
@main
struct DelegateCheckCommand {
    static func main() {
        var arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.isEmpty || arguments.contains(where: { $0 == "-h" || $0 == "--help" }) {
            print("usage: ferry-delegate-check [--protocols URLSessionDelegate.swift] [--stamp FILE] PATH…  (Swift files, or folders searched for them)")
            exit(arguments.isEmpty ? 2 : 0)
        }
        let stamp = option("--stamp", in: &arguments)
        guard let protocols = option("--protocols", in: &arguments) ?? DelegateRequirements.protocolsFile(from: FileManager.default.currentDirectoryPath) else {
            fail("no --protocols, and no \(DelegateRequirements.protocolsPath) here or under .build/checkouts", status: 2)
        }
        guard let declared = try? String(contentsOfFile: protocols, encoding: .utf8) else { fail("cannot read \(protocols)", status: 1) }
        let requirements = DelegateRequirements.protocolRequirements(in: declared)
        guard !requirements.isEmpty else { fail("no delegate protocols in \(protocols)", status: 1) }
        var status: Int32 = 0
        for file in swiftFiles(in: arguments) {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                FileHandle.standardError.write(Data("\(file): error: cannot read the file\n".utf8))
                status = 1
                continue
            }
            for miss in nearMisses(in: text, requirements: requirements) {
                print("\(file):\(miss.method.line):\(miss.method.column): warning: \(miss.message)")
            }
        }
        if let stamp {
            let note = "// Written by Ferry's DelegateCheck plugin, which checks this target's delegate methods.\n"
            do {
                try note.write(toFile: stamp, atomically: true, encoding: .utf8)
            } catch {
                fail("cannot write \(stamp): \(error)", status: 1)
            }
        }
        exit(status)
    }

    /// The near misses in one file's text, in the order of the methods.
    static func nearMisses(in text: String, requirements: [DelegateRequirements.Requirement]) -> [NearMiss] {
        let names = Set(requirements.map(\.declaration.name))
        return FunctionDeclaration.declarations(in: SourceText(text), named: names).compactMap { NearMiss.check($0, against: requirements) }
    }

    /// The files named and the `.swift` files under the folders named, in order.
    static func swiftFiles(in paths: [String]) -> [String] {
        var files: [String] = []
        for path in paths {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), isFolder.boolValue else {
                files.append(path)
                continue
            }
            let found = FileManager.default.enumerator(atPath: path)?.compactMap { $0 as? String } ?? []
            files += found.filter { $0.hasSuffix(".swift") && !$0.hasPrefix(".build/") }.sorted()
                .map { (path as NSString).appendingPathComponent($0) }
        }
        return files
    }

    /// The value of `name` (`--stamp FILE`), taken out of `arguments`; nil when absent.
    private static func option(_ name: String, in arguments: inout [String]) -> String? {
        guard let index = arguments.firstIndex(of: name) else { return nil }
        guard index + 1 < arguments.count else { fail("\(name) needs a file", status: 2) }
        let value = arguments[index + 1]
        arguments.removeSubrange(index...index + 1)
        return value
    }

    private static func fail(_ message: String, status: Int32) -> Never {
        FileHandle.standardError.write(Data("ferry-delegate-check: \(message)\n".utf8))
        exit(status)
    }
}
