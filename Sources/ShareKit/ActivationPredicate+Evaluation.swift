extension ActivationPredicate {
    /// Whether `content` passes the predicate, and if not, why: the verdict of
    /// ``ActivationRule/evaluate(_:)`` for a predicate rule.
    ///
    /// ```swift
    /// let atMostFive = try ActivationPredicate("SUBQUERY(extensionItems, $e, $e.attachments.@count <= 5).@count == 1")
    /// atMostFive.evaluate(ShareContent(attachments: Array(repeating: .pdf, count: 6))).reason
    /// // "0 of 1 extension items match, expected == 1: 6 attachments, expected <= 5"
    /// ```
    ///
    /// `content` is one extension item (its text, `attributedContentText`) holding its
    /// attachments, each with its type as `registeredTypeIdentifiers`. Empty content is
    /// refused whatever the predicate, as for every rule. A refusal's reason explains the
    /// part that failed: a count with what it counted and what was expected (and, when too
    /// few matched, why the first other one did not), a type that does not conform,
    /// `no text`, `FALSEPREDICATE`.
    public func evaluate(_ content: ShareContent) -> ActivationRule.Verdict {
        if content.isEmpty { return .refused(reason: "nothing to share") }
        let outcome = PredicateEvaluation(content: content).evaluate(root)
        return outcome.holds ? .accepted : .refused(reason: outcome.reason)
    }
}

/// One evaluation: the content and the SUBQUERY variables bound so far. Each result carries
/// the reason it came out as it did, so that `NOT` can turn a reason for true into one for false.
struct PredicateEvaluation {
    typealias Node = ActivationPredicate.Node

    struct Outcome {
        var holds: Bool
        var reason: String
    }

    /// A count with the words for it: `2 attachments`, `1 of 3 attachments match`.
    struct Counted {
        var value: Int
        var phrase: String
        var isLiteral = false
        /// Why the first element a SUBQUERY left out did not match, if it left one out.
        var firstMiss: String?
    }

    /// What a variable stands for: the one extension item, or an attachment of that type.
    enum Bound { case item, attachment(TypeIdentifier) }

    let content: ShareContent
    var variables: [String: Bound] = [:]

    func evaluate(_ node: Node) -> Outcome {
        switch node {
        case .constant(let value):
            return Outcome(holds: value, reason: value ? "TRUEPREDICATE" : "FALSEPREDICATE accepts nothing")
        case .not(let inner):
            let outcome = evaluate(inner)
            return Outcome(holds: !outcome.holds, reason: outcome.reason)
        case .and(let lhs, let rhs):
            let left = evaluate(lhs)
            guard left.holds else { return left }
            let right = evaluate(rhs)
            return right.holds ? Outcome(holds: true, reason: "\(left.reason); \(right.reason)") : right
        case .or(let lhs, let rhs):
            let left = evaluate(lhs)
            if left.holds { return left }
            let right = evaluate(rhs)
            return right.holds ? right : Outcome(holds: false, reason: "\(left.reason); \(right.reason)")
        case .type(let variable, let equals, let wanted):
            guard case .attachment(let type)? = variables[variable] else { return Outcome(holds: false, reason: "\(variable) is unbound") }
            let holds = equals ? type == wanted : type.conforms(to: wanted)
            let relation = equals ? (holds ? "is" : "is not") : (holds ? "conforms to" : "does not conform to")
            return Outcome(holds: holds, reason: "\(type.rawValue) \(relation) \(wanted.rawValue)")
        case .text(_, let present):
            let holds = content.hasText == present
            return Outcome(holds: holds, reason: content.hasText ? "the item has text" : "the item has no text")
        case .compare(let lhs, let comparison, let rhs):
            var (subject, test, target) = (count(lhs), comparison, count(rhs))
            if subject.isLiteral && !target.isLiteral { (subject, test, target) = (target, comparison.flipped, subject) }
            let holds = test.holds(subject.value, target.value)
            var reason = "\(subject.phrase), \(holds ? "" : "expected ")\(test.rawValue) \(target.value)"
            if !target.isLiteral { reason += " (\(target.phrase))" }
            let tooFew = test == .greater || test == .greaterOrEqual || (test == .equal && subject.value < target.value)
            if !holds, tooFew, let miss = subject.firstMiss { reason += ": \(miss)" }
            return Outcome(holds: holds, reason: reason)
        }
    }

    func count(_ count: ActivationPredicate.Count) -> Counted {
        switch count {
        case .literal(let value):
            return Counted(value: value, phrase: String(value), isLiteral: true)
        case .all(let collection):
            let elements = self.elements(of: collection)
            return Counted(value: elements.count, phrase: Self.phrase(elements.count, of: collection))
        case .subquery(let collection, let variable, let predicate):
            let elements = self.elements(of: collection)
            var matched = 0
            var firstMiss: String?
            for element in elements {
                var scoped = self
                scoped.variables[variable] = element
                let outcome = scoped.evaluate(predicate)
                if outcome.holds { matched += 1 } else if firstMiss == nil { firstMiss = outcome.reason }
            }
            let phrase = elements.isEmpty
                ? Self.phrase(0, of: collection)
                : "\(matched) of \(elements.count) \(Self.nouns(collection).many) \(matched == 1 ? "matches" : "match")"
            return Counted(value: matched, phrase: phrase, firstMiss: firstMiss)
        }
    }

    /// The content is one extension item; its attachments are those of ``ShareContent``.
    func elements(of collection: ActivationPredicate.Collection) -> [Bound] {
        switch collection {
        case .extensionItems: [.item]
        case .attachments: content.attachments.map(Bound.attachment)
        }
    }

    /// `1 extension item`, `3 attachments`, `no attachments`.
    static func phrase(_ count: Int, of collection: ActivationPredicate.Collection) -> String {
        let (one, many) = nouns(collection)
        return count == 0 ? "no \(many)" : "\(count) \(count == 1 ? one : many)"
    }

    static func nouns(_ collection: ActivationPredicate.Collection) -> (one: String, many: String) {
        switch collection {
        case .extensionItems: ("extension item", "extension items")
        case .attachments: ("attachment", "attachments")
        }
    }
}
