/// A method that nearly matches a delegate requirement, and so will never be called: the
/// requirement it nearly matches and what differs.
///
/// Near: the same base name and number of parameters as a requirement, each argument label
/// the requirement's or close to it, and something different (a label, a type, `async` or
/// `throws`, a result). A label is close when it is at most two edits away (`didRecieve`), differs in
/// case only, ends with the other (`task` for `dataTask`), or is the parameter's name where
/// the requirement has no label (`session` for `_`). A method that matches a requirement
/// exactly, or is near none, gives nothing.
struct NearMiss: Equatable {
    var method: FunctionDeclaration
    var protocolName: String
    var requirement: FunctionDeclaration
    /// What differs, each as "what the requirement has expected, what the method has found".
    var differences: [String]

    /// The warning: "instance method 'urlSession(_:dataTask:didRecieve:)' nearly matches
    /// requirement 'urlSession(_:dataTask:didReceive:)' of 'URLSessionDataDelegate' (label
    /// 'didReceive' expected, 'didRecieve' found): it will never be called".
    var message: String {
        "instance method '\(method.fullName)' nearly matches requirement '\(requirement.fullName)' of '\(protocolName)'"
            + " (\(differences.joined(separator: "; "))): it will never be called"
    }

    /// The requirement `method` nearly matches, the closest when several do; nil when it
    /// matches one exactly or is near none.
    static func check(_ method: FunctionDeclaration, against requirements: [DelegateRequirements.Requirement]) -> NearMiss? {
        var best: (miss: NearMiss, distance: Int)?
        for requirement in requirements {
            let wanted = requirement.declaration
            guard wanted.name == method.name, wanted.parameters.count == method.parameters.count else { continue }
            var differences: [String] = []
            var distance = 0
            for (expected, found) in zip(wanted.parameters, method.parameters) {
                guard let labelDistance = Self.labelDistance(expected: expected, found: found) else {
                    differences = ["far"]
                    distance = Int.max
                    break
                }
                if labelDistance > 0 {
                    differences.append("\(Self.describe(expected.label)) expected, \(Self.describe(found.label)) found")
                    distance += labelDistance
                }
                if TypeSpelling.normalized(expected.type) != TypeSpelling.normalized(found.type) {
                    differences.append("\(expected.name): \(expected.type) expected, \(found.type) found")
                    distance += 1
                }
            }
            guard distance != Int.max else { continue }
            if !method.effects.isEmpty {
                differences.append("synchronous expected, '\(method.effects.joined(separator: " "))' found")
                distance += 1
            }
            if let result = method.result, !["Void", "()"].contains(TypeSpelling.normalized(result)) {
                differences.append("no result expected, '\(result)' found")
                distance += 1
            }
            if differences.isEmpty { return nil }  // an exact match: called
            let miss = NearMiss(method: method, protocolName: requirement.protocolName, requirement: wanted, differences: differences)
            if best == nil || distance < best!.distance || (distance == best!.distance && differences.count < best!.miss.differences.count) {
                best = (miss, distance)
            }
        }
        return best?.miss
    }

    /// 0 for the same label, how far otherwise when it is close (see the type), nil when not.
    static func labelDistance(expected: FunctionDeclaration.Parameter, found: FunctionDeclaration.Parameter) -> Int? {
        let wanted = expected.label
        let written = found.label
        if wanted == written { return 0 }
        if wanted == "_" { return written == expected.name ? 1 : nil }
        if written == "_" { return found.name == wanted ? 1 : nil }
        if wanted.lowercased() == written.lowercased() { return 1 }
        let (shorter, longer) = wanted.count < written.count ? (wanted, written) : (written, wanted)
        if shorter.count >= 4, longer.lowercased().hasSuffix(shorter.lowercased()) { return 2 }
        let edits = editDistance(wanted, written)
        return edits <= 2 ? edits : nil
    }

    /// The optimal string alignment distance: insertions, deletions, substitutions and
    /// swaps of neighbours (`didRecieve` is one swap from `didReceive`).
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var table = Array(repeating: Array(repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    table[i][j] = min(table[i][j], table[i - 2][j - 2] + 1)
                }
            }
        }
        return table[a.count][b.count]
    }

    /// "label 'task'", or "no label" for `_`.
    private static func describe(_ label: String) -> String {
        label == "_" ? "no label" : "label '\(label)'"
    }
}
