import FerryCore
import FerryProtocol
import Foundation
import Prometheus

/// ferryd's figures as Prometheus text (`metrics` request, `ferry daemon metrics`).
///
/// One source: the numbers are those of `status` (counts from the store, connections, RSS)
/// and the ``DaemonActivity`` counters ferryd keeps since it started; each reading renders
/// them through swift-prometheus's registry, so names, types and escaping follow the
/// exposition format without a global metrics system (two daemons in one test process do not mix).
///
/// ```
/// # TYPE ferryd_tasks gauge
/// ferryd_tasks{state="waiting"} 3
/// # TYPE ferryd_bytes_received_total counter
/// ferryd_bytes_received_total 1048576
/// ```
enum DaemonMetrics {
    static func exposition(of status: DaemonStatus) -> String {
        let registry = PrometheusCollectorRegistry()
        let byState: [(TaskState, Int?)] = [
            (.waiting, status.waitingTaskCount), (.running, status.runningTaskCount), (.suspended, status.suspendedTaskCount),
            (.completed, status.completedTaskCount), (.failed, status.failedTaskCount), (.cancelled, status.cancelledTaskCount),
        ]
        /// `ferryd_<name>_<unit>`; an empty unit adds nothing.
        func name(_ metric: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
            MetricNameDescriptor(namespace: "ferryd", metricName: metric, unitName: unit, helpText: help)
        }
        let tasks = name("tasks", "", "Tasks in the store, by state")
        for (state, count) in byState {
            registry.makeGauge(descriptor: tasks, labels: [("state", state.rawValue)]).set(Int64(count ?? 0))
        }
        func gauge(_ metric: String, _ unit: String, _ help: String, _ value: Int64) {
            registry.makeGauge(descriptor: name(metric, unit, help)).set(value)
        }
        gauge("events_waiting", "", "Events stored and not yet acknowledged", Int64(status.undeliveredEventCount))
        gauge("connections", "", "Client connections open now", Int64(status.connectionCount))
        gauge("sessions", "", "Background sessions in the store", Int64(status.sessionCount))
        gauge("owned_sessions", "", "Sessions a process is connected to as owner", Int64(status.ownedSessionCount))
        gauge("resident_memory", "bytes", "Resident set size of ferryd", status.residentMemoryBytes ?? 0)
        gauge("start_time", "seconds", "When ferryd started, in seconds since 1970", Int64(status.startedAt.timeIntervalSince1970))

        let activity = status.activity ?? DaemonActivity()
        func counter(_ metric: String, _ help: String, _ value: Int64, labels: [(String, String)] = []) {
            registry.makeCounter(descriptor: name(metric, "total", help), labels: labels).increment(by: value)
        }
        counter("attempts", "Transfer attempts started", Int64(activity.attempts))
        counter("retries", "Failed attempts scheduled to be tried again", Int64(activity.retries))
        for (outcome, value) in [("completed", activity.completedTasks), ("failed", activity.failedTasks), ("cancelled", activity.cancelledTasks)] {
            counter("tasks_finished", "Tasks that ended, by outcome", Int64(value), labels: [("outcome", outcome)])
        }
        counter("bytes_sent", "Request body bytes sent", activity.bytesSent)
        counter("bytes_received", "Response body bytes received", activity.bytesReceived)
        counter("requests", "Protocol requests answered", Int64(activity.requests))
        counter("connections_accepted", "Client connections accepted", Int64(activity.connections))
        return registry.emitToString()
    }

    /// VmRSS from /proc/self/status, in bytes (nil where there is no /proc).
    static func residentMemoryBytes() -> Int64? {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kib = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap({ Int64($0) })
        else { return nil }
        return kib * 1024
    }
}
