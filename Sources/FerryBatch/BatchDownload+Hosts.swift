/// Which hosts get connections in a batch: at most `perHost` each and `total` in all (a list
/// that names a thousand hosts must not open six thousand sockets), handed out in turn so
/// that one host's long queue does not starve the others. A value with no I/O: `BatchRun`
/// keeps it under its lock and opens the connections `grants()` returns.
struct ConnectionPlan {
    struct HostKey: Hashable, Sendable {
        var host: String
        var port: Int
        var secure: Bool
        var defaultPort: Int { secure ? 443 : 80 }
    }

    struct HostQueue {
        var pending: [Int] = []
        var head = 0
        /// Open or being opened.
        var connections = 0
        var everConnected = false
        /// A connection could not be made: no new ones while others drain the queue.
        var refusing = false
        /// The one more try after a host that had answered refused.
        var retried = false
        var remaining: Int { pending.count - head }
        var isEmpty: Bool { remaining == 0 }
    }

    let perHost: Int
    let total: Int
    private(set) var hosts: [HostKey: HostQueue] = [:]
    private var order: [HostKey] = []
    private var cursor = 0
    /// Connections open or being opened, over every host.
    private(set) var open = 0

    init(perHost: Int, total: Int) {
        self.perHost = max(1, perHost)
        self.total = max(1, total)
    }

    mutating func add(_ index: Int, to key: HostKey) {
        if hosts[key] == nil {
            hosts[key] = HostQueue()
            order.append(key)
        }
        hosts[key]!.pending.append(index)
    }

    /// The next item for a connection to `key`.
    mutating func next(_ key: HostKey) -> Int? {
        guard var queue = hosts[key], !queue.isEmpty else { return nil }
        let index = queue.pending[queue.head]
        queue.head += 1
        hosts[key] = queue
        return index
    }

    /// Puts an item back at the front of its host's queue.
    mutating func requeue(_ index: Int, _ key: HostKey) {
        guard var queue = hosts[key] else { return }
        if queue.head > 0 {
            queue.head -= 1
            queue.pending[queue.head] = index
        } else {
            queue.pending.insert(index, at: 0)
        }
        hosts[key] = queue
    }

    /// Every item not yet started, taken out of the queues (the batch was cancelled).
    mutating func drain() -> [Int] {
        var waiting: [Int] = []
        for key in order {
            while let index = next(key) { waiting.append(index) }
        }
        return waiting
    }

    /// Connections to open now, one host after another; each is counted as open.
    mutating func grants() -> [HostKey] {
        var granted: [HostKey] = []
        var idle = 0  // hosts visited in a row without a grant
        while open < total, idle < order.count {
            let key = order[cursor]
            cursor = (cursor + 1) % order.count
            var queue = hosts[key]!
            guard !queue.refusing, queue.connections < perHost, queue.connections < queue.remaining else {
                idle += 1
                continue
            }
            queue.connections += 1
            hosts[key] = queue
            open += 1
            granted.append(key)
            idle = 0
        }
        return granted
    }

    mutating func connected(_ key: HostKey) {
        hosts[key]?.everConnected = true
        hosts[key]?.refusing = false
    }

    /// A connection that was made has closed.
    mutating func ended(_ key: HostKey) {
        guard var queue = hosts[key] else { return }
        open -= 1
        queue.connections -= 1
        // The last one gone with items left: someone must try again (a refusal then gives up).
        if queue.connections == 0, queue.refusing, !queue.isEmpty { queue.refusing = false }
        hosts[key] = queue
    }

    /// A connection could not be made. Returns the items to give up: none while other
    /// connections to the host drain its queue, or when a host that had answered gets one
    /// more try; otherwise every item still waiting for it.
    mutating func failed(_ key: HostKey) -> [Int] {
        guard var queue = hosts[key] else { return [] }
        open -= 1
        queue.connections -= 1
        defer { hosts[key] = queue }
        if queue.connections > 0 {
            queue.refusing = true
            return []
        }
        if queue.everConnected, !queue.retried, !queue.isEmpty {
            queue.retried = true
            queue.refusing = false
            return []
        }
        queue.refusing = true
        let waiting = Array(queue.pending[queue.head...])
        queue.head = queue.pending.count
        return waiting
    }
}
