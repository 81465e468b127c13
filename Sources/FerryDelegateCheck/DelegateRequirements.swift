import Foundation

/// The requirements of Ferry's four URLSession delegate protocols, which the check compares
/// methods with: read from their declarations in Ferry's
/// `Sources/Ferry/URLSession/URLSessionDelegate.swift` each time it runs, so that there is no
/// second list to keep in step (the plugin passes that file; it cannot import Ferry).
enum DelegateRequirements {
    /// One requirement: the protocol that declares it and its declaration.
    struct Requirement {
        var protocolName: String
        var declaration: FunctionDeclaration
    }

    /// Where the protocols are declared, from the root of Ferry's package.
    static let protocolsPath = "Sources/Ferry/URLSession/URLSessionDelegate.swift"

    /// Ferry's protocols file seen from `folder`: Ferry's own checkout, or a package that
    /// depends on Ferry and was resolved there (`.build/checkouts/<Ferry>/…`). For runs by hand.
    static func protocolsFile(from folder: String) -> String? {
        let own = (folder as NSString).appendingPathComponent(protocolsPath)
        if FileManager.default.fileExists(atPath: own) { return own }
        let checkouts = (folder as NSString).appendingPathComponent(".build/checkouts")
        let packages = (try? FileManager.default.contentsOfDirectory(atPath: checkouts)) ?? []
        return packages.sorted().map { (checkouts as NSString).appendingPathComponent("\($0)/\(protocolsPath)") }
            .first { FileManager.default.fileExists(atPath: $0) }
    }

    /// The `func` requirements of every protocol declared in `text`, with the protocol's name,
    /// in the order written.
    static func protocolRequirements(in text: String) -> [Requirement] {
        let source = SourceText(text)
        let functions = FunctionDeclaration.declarations(in: source, named: nil)
        var requirements: [Requirement] = []
        for block in protocolBlocks(in: source) {
            for function in functions where block.lines.contains(function.line) {
                requirements.append(Requirement(protocolName: block.name, declaration: function))
            }
        }
        return requirements
    }

    /// Each `protocol Name … { … }` of `source`: its name and the lines of its body.
    private static func protocolBlocks(in source: SourceText) -> [(name: String, lines: ClosedRange<Int>)] {
        let code = source.code
        var blocks: [(name: String, lines: ClosedRange<Int>)] = []
        var index = 0
        while let keyword = source.nextWord("protocol", from: index) {
            var position = keyword.upperBound
            while position < code.count, code[position] == UInt8(ascii: " ") { position += 1 }
            let nameStart = position
            while position < code.count, isIdentifierByte(code[position]) { position += 1 }
            let name = source.text(nameStart..<position)
            guard !name.isEmpty, let open = code[position...].firstIndex(of: UInt8(ascii: "{")) else {
                index = position
                continue
            }
            var depth = 0
            var close = open
            for offset in open..<code.count {
                if code[offset] == UInt8(ascii: "{") { depth += 1 }
                if code[offset] == UInt8(ascii: "}") { depth -= 1 }
                close = offset
                if depth == 0 { break }
            }
            blocks.append((name, source.position(of: open).line...source.position(of: close).line))
            index = close
        }
        return blocks
    }
}
