import Foundation
import HTTPTypes
import Synchronization

/// Imgur-style rate limits: a budget per `Client-ID` and one per user (client address), each
/// refilled when its window ends. Counted in memory; a restart gives everyone a fresh budget.
final class RateLimiter: Sendable {
    struct Budget { var used: Int; var resetAt: Date }
    struct Verdict: Sendable {
        var allowed: Bool
        var clientRemaining: Int
        var userRemaining: Int
        var userReset: Date
    }

    let clientLimit: Int
    let userLimit: Int
    let window: TimeInterval
    private let state = Mutex<(clients: [String: Budget], users: [String: Budget])>(([:], [:]))

    init(clientLimit: Int, userLimit: Int, window: TimeInterval) {
        self.clientLimit = clientLimit
        self.userLimit = userLimit
        self.window = window
    }

    /// Spends one request of both budgets if both have one left.
    func spend(clientID: String, user: String, now: Date = Date()) -> Verdict {
        state.withLock { state in
            var client = state.clients[clientID] ?? Budget(used: 0, resetAt: now + window)
            var person = state.users[user] ?? Budget(used: 0, resetAt: now + window)
            if client.resetAt <= now { client = Budget(used: 0, resetAt: now + window) }
            if person.resetAt <= now { person = Budget(used: 0, resetAt: now + window) }
            let allowed = client.used < clientLimit && person.used < userLimit
            if allowed {
                client.used += 1
                person.used += 1
            }
            state.clients[clientID] = client
            state.users[user] = person
            return Verdict(allowed: allowed, clientRemaining: max(0, clientLimit - client.used),
                           userRemaining: max(0, userLimit - person.used), userReset: person.resetAt)
        }
    }

    /// The `X-RateLimit-*` headers for a verdict.
    func headers(_ verdict: Verdict) -> HTTPFields {
        var fields = HTTPFields()
        fields[HTTPField.Name("X-RateLimit-ClientLimit")!] = String(clientLimit)
        fields[HTTPField.Name("X-RateLimit-ClientRemaining")!] = String(verdict.clientRemaining)
        fields[HTTPField.Name("X-RateLimit-UserLimit")!] = String(userLimit)
        fields[HTTPField.Name("X-RateLimit-UserRemaining")!] = String(verdict.userRemaining)
        fields[HTTPField.Name("X-RateLimit-UserReset")!] = String(Int(verdict.userReset.timeIntervalSince1970))
        return fields
    }
}
