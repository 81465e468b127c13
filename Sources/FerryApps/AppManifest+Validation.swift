public import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension AppManifest {
    /// Reads a manifest from JSON and checks it (``validate()``): any problem is an
    /// ``AppManifestError`` naming the field — missing, of the wrong type, unknown (a typo
    /// such as `appGroup` would otherwise silently mean "no groups"), or with a bad value.
    public static func decode(from data: Data) throws(AppManifestError) -> AppManifest {
        let raw: JSONValue
        do {
            raw = try JSONDecoder().decode(JSONValue.self, from: data)
        } catch {
            throw AppManifestError(field: "", "not valid JSON (\(Self.jsonProblem(error)))")
        }
        guard case .object(let fields) = raw else {
            throw AppManifestError(field: "", "expected a JSON object, found \(raw.typeName)")
        }
        try Self.refuseUnknownKeys(fields, known: CodingKeys.allCases.map(\.rawValue), at: "")
        if case .array(let extensions)? = fields[CodingKeys.extensions.rawValue] {
            for (index, item) in extensions.enumerated() {
                guard case .object(let extensionFields) = item else { continue }
                try Self.refuseUnknownKeys(
                    extensionFields, known: ExtensionManifest.CodingKeys.allCases.map(\.rawValue), at: "extensions[\(index)].")
            }
        }
        let manifest: AppManifest
        do {
            manifest = try JSONDecoder().decode(AppManifest.self, from: data)
        } catch let error as DecodingError {
            throw Self.fieldError(error, in: raw)
        } catch {
            throw AppManifestError(field: "", "cannot be read: \(error)")
        }
        try manifest.validate()
        return manifest
    }

    /// Checks the values, without touching the file system: identifiers, absolute paths,
    /// extensions under the app's identifier, no identifier or executable used twice,
    /// known extension points.
    public func validate() throws(AppManifestError) {
        try Self.checkBundleIdentifier(bundleIdentifier, field: "bundleIdentifier")
        try Self.checkName(name, field: "name")
        var executableOwners: [String: String] = [:]
        try Self.checkExecutables(executables, field: "executables", owners: &executableOwners)

        guard let program = launch.first else {
            throw AppManifestError(field: "launch", "must name the program to run (an absolute path) and its arguments")
        }
        guard program.hasPrefix("/") else {
            throw AppManifestError(field: "launch[0]", "must be an absolute path, not \"\(program)\"")
        }
        if let index = launch.firstIndex(where: { $0.contains("\0") }) {
            throw AppManifestError(field: "launch[\(index)]", "contains a NUL character")
        }

        var groups: Set<String> = []
        for (index, group) in appGroups.enumerated() {
            let field = "appGroups[\(index)]"
            guard group.hasPrefix("group."), group.count <= 255,
                Self.isReverseDNS(String(group.dropFirst("group.".count)), minimumParts: 1)
            else {
                throw AppManifestError(field: field, "\"\(group)\" is not an app group: expected group.<reverse-DNS name>, e.g. group.com.example.app")
            }
            guard groups.insert(group).inserted else {
                throw AppManifestError(field: field, "\"\(group)\" is listed twice")
            }
        }

        var identifiers: Set<String> = [bundleIdentifier]
        var sessions: Set<String> = []
        for (index, item) in extensions.enumerated() {
            let prefix = "extensions[\(index)]."
            try Self.checkBundleIdentifier(item.bundleIdentifier, field: prefix + "bundleIdentifier")
            guard item.bundleIdentifier.hasPrefix(bundleIdentifier + ".") else {
                throw AppManifestError(
                    field: prefix + "bundleIdentifier",
                    "\"\(item.bundleIdentifier)\" must start with the app's identifier and a dot (\(bundleIdentifier).…)")
            }
            guard identifiers.insert(item.bundleIdentifier).inserted else {
                throw AppManifestError(field: prefix + "bundleIdentifier", "\"\(item.bundleIdentifier)\" is used by another extension")
            }
            try Self.checkName(item.name, field: prefix + "name")
            try Self.checkExecutables(item.executables, field: prefix + "executables", owners: &executableOwners)
            guard ExtensionManifest.knownPoints.contains(item.point) else {
                let known = ExtensionManifest.knownPoints.sorted().joined(separator: ", ")
                throw AppManifestError(field: prefix + "point", "unknown extension point \"\(item.point)\" (known: \(known))")
            }
            if let session = item.backgroundSessionIdentifier {
                guard !session.isEmpty, session.utf8.count <= 255, !session.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
                    throw AppManifestError(field: prefix + "backgroundSessionIdentifier", "must be 1 to 255 bytes without control characters")
                }
                // Each extension has a session of its own: two sharing one would take it from each other.
                guard sessions.insert(session).inserted else {
                    throw AppManifestError(field: prefix + "backgroundSessionIdentifier", "\"\(session)\" is another extension's session: each extension has its own")
                }
            }
        }
    }

    /// Checks that the programs exist and may be run: `executables` of the app and its
    /// extensions, and `launch[0]`. ``AppRegistry`` calls it on install.
    public func checkFilesExist() throws(AppManifestError) {
        var programs: [(String, String)] = executables.enumerated().map { ("executables[\($0)]", $1) }
        for (index, item) in extensions.enumerated() {
            programs += item.executables.enumerated().map { ("extensions[\(index)].executables[\($0)]", $1) }
        }
        if let program = launch.first { programs.append(("launch[0]", program)) }
        for (field, path) in programs {
            var info = stat()
            guard stat(path, &info) == 0 else {
                throw AppManifestError(field: field, "\(path): \(String(cString: strerror(errno)))")
            }
            guard info.st_mode & S_IFMT == S_IFREG else {
                throw AppManifestError(field: field, "\(path) is not a regular file")
            }
            guard access(path, X_OK) == 0 else {
                throw AppManifestError(field: field, "\(path) is not executable (chmod +x)")
            }
        }
    }

    // MARK: Rules

    /// Letters, digits and `-` between dots; `minimumParts` parts or more.
    static func isReverseDNS(_ text: String, minimumParts: Int) -> Bool {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count >= minimumParts else { return false }
        return parts.allSatisfy { part in
            !part.isEmpty && part.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "-") }
        }
    }

    static func checkBundleIdentifier(_ identifier: String, field: String) throws(AppManifestError) {
        guard identifier.utf8.count <= 255, isReverseDNS(identifier, minimumParts: 2) else {
            throw AppManifestError(
                field: field,
                "\"\(identifier)\" is not a reverse-DNS bundle identifier (letters, digits and - between dots, e.g. com.example.app)")
        }
    }

    static func checkName(_ name: String, field: String) throws(AppManifestError) {
        guard !name.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw AppManifestError(field: field, "must not be empty")
        }
        if name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw AppManifestError(field: field, "must not contain control characters")
        }
    }

    /// At least one, each absolute, none claimed twice in the manifest (`owners`: path → field).
    static func checkExecutables(_ paths: [String], field: String, owners: inout [String: String]) throws(AppManifestError) {
        guard !paths.isEmpty else {
            throw AppManifestError(field: field, "must list at least one program (an absolute path)")
        }
        for (index, path) in paths.enumerated() {
            let name = "\(field)[\(index)]"
            guard path.hasPrefix("/") else {
                throw AppManifestError(field: name, "must be an absolute path, not \"\(path)\"")
            }
            guard !path.contains("\0") else { throw AppManifestError(field: name, "contains a NUL character") }
            let normalized = URL(fileURLWithPath: path).standardizedFileURL.path
            if let other = owners[normalized] {
                throw AppManifestError(field: name, "\(path) is already listed at \(other): a program belongs to one app or extension")
            }
            owners[normalized] = name
        }
    }

    // MARK: Messages

    static func refuseUnknownKeys(_ fields: [String: JSONValue], known: [String], at prefix: String) throws(AppManifestError) {
        if let unknown = fields.keys.sorted().first(where: { !known.contains($0) }) {
            throw AppManifestError(field: prefix + unknown, "unknown field (known: \(known.joined(separator: ", ")))")
        }
    }

    /// A decoding error as "field: what is wrong", the found type read from `raw`.
    static func fieldError(_ error: DecodingError, in raw: JSONValue) -> AppManifestError {
        switch error {
        case .keyNotFound(let key, let context):
            return AppManifestError(field: path(context.codingPath + [key]), "missing")
        case .valueNotFound(let type, let context):
            return AppManifestError(field: path(context.codingPath), "expected \(typeName(type)), found null")
        case .typeMismatch(let type, let context):
            let found = value(at: context.codingPath, in: raw)?.typeName ?? "something else"
            return AppManifestError(field: path(context.codingPath), "expected \(typeName(type)), found \(found)")
        case .dataCorrupted(let context):
            return AppManifestError(field: path(context.codingPath), context.debugDescription)
        @unknown default:
            return AppManifestError(field: "", "\(error)")
        }
    }

    static func path(_ codingPath: [any CodingKey]) -> String {
        var text = ""
        for key in codingPath {
            if let index = key.intValue {
                text += "[\(index)]"
            } else {
                text += (text.isEmpty ? "" : ".") + key.stringValue
            }
        }
        return text
    }

    static func value(at codingPath: [any CodingKey], in raw: JSONValue) -> JSONValue? {
        var current = raw
        for key in codingPath {
            switch current {
            case .object(let fields): guard let next = fields[key.stringValue] else { return nil }; current = next
            case .array(let items): guard let index = key.intValue, items.indices.contains(index) else { return nil }; current = items[index]
            default: return nil
            }
        }
        return current
    }

    static func typeName(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is [String].Type, is [ExtensionManifest].Type: "an array"
        case is Bool.Type: "a boolean"
        case is Double.Type, is Int.Type: "a number"
        default: String(describing: type).hasPrefix("Array") ? "an array" : (String(describing: type).hasPrefix("Dictionary") ? "an object" : "\(type)")
        }
    }

    static func jsonProblem(_ error: any Error) -> String {
        if case DecodingError.dataCorrupted(let context) = error {
            return (context.underlyingError.map { "\($0)" } ?? context.debugDescription)
        }
        return "\(error)"
    }
}
