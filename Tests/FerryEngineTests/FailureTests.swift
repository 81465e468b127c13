import FerryCore
import FerryEngine
import FerryTestSupport
import Foundation
import Testing

@Suite("Misbehaving servers and limits")
struct FailureTests {
    @Test("a stalled server fails with timedOut after the idle time-out, not later")
    func idleTimeout() async throws {
        try await withServerAndEngine(configure: { $0.idleTimeout = 1 }) { server, engine in
            let start = ContinuousClock.now
            await expectFerryError(.timedOut) {
                try await engine.run(Transfer(request: Request(url: url(server, "/bytes/100000?seed=1&stallAfter=1000&stallSeconds=10"))))
            }
            let elapsed = ContinuousClock.now - start
            #expect(elapsed >= .milliseconds(900) && elapsed < .seconds(5))
        }
    }

    @Test("transfers with different idle time-outs each end on their own: a short one started beside a long one, and a caller's cancel")
    func idleTimeoutsSideBySide() async throws {
        try await withServerAndEngine(configure: { $0.idleTimeout = 30 }) { server, engine in
            let stalled = "/bytes/100000?seed=2&stallAfter=1000&stallSeconds=4"
            let long = Task { try await engine.run(Transfer(request: Request(url: url(server, stalled)))) }
            try await Task.sleep(for: .milliseconds(200))
            let start = ContinuousClock.now
            await expectFerryError(.timedOut) {
                try await engine.run(Transfer(request: Request(url: url(server, stalled)), idleTimeout: 1))
            }
            let elapsed = ContinuousClock.now - start
            #expect(elapsed >= .milliseconds(900) && elapsed < .seconds(5), "the short time-out ended after \(elapsed)")
            long.cancel()
            let outcome = await long.result
            guard case .failure(let error) = outcome, let failure = error as? FerryError else {
                Issue.record("the long transfer should end cancelled: \(outcome)")
                return
            }
            #expect(failure.code == .cancelled, "\(failure)")
        }
    }

    @Test("slow headers count as idle time too")
    func slowHeaders() async throws {
        try await withServerAndEngine(configure: { $0.idleTimeout = 1 }) { server, engine in
            await expectFerryError(.timedOut) {
                try await engine.run(Transfer(request: Request(url: url(server, "/slow-headers/4000"))))
            }
        }
    }

    @Test("a dripping server that keeps sending does not time out, but the resource time-out ends it")
    func resourceTimeout() async throws {
        try await withServerAndEngine(configure: { $0.idleTimeout = 2 }) { server, engine in
            let start = ContinuousClock.now
            let failure = await expectFerryError(.timedOut) {
                try await engine.run(Transfer(request: Request(url: url(server, "/bytes/100000?seed=1&drip=20000")), resourceTimeout: 1.5))
            }
            #expect(failure?.message.contains("timeoutIntervalForResource") == true)
            #expect(ContinuousClock.now - start < .seconds(4))
        }
    }

    @Test("503 with Retry-After: no new request before the server's time")
    func retryAfterIsHonoured() async throws {
        let sleeper = RecordingSleeper()
        try await withServerAndEngine(sleeper: sleeper) { server, engine in
            let result = try await engine.run(
                Transfer(request: Request(url: url(server, "/flaky/a?failures=1&status=503&retryAfter=2&then=/bytes/100")), retry: .standard))
            #expect(result.response.statusCode == 200)
            #expect(sleeper.requested == [.seconds(2)])
            let arrivals = server.requests.filter { $0.path.hasPrefix("/flaky") }.map(\.receivedAt)
            #expect(arrivals.count == 2)
            if arrivals.count == 2 { #expect(arrivals[1] - arrivals[0] >= .seconds(2)) }
        }
    }

    @Test("without a retry policy, a 503 is delivered as a response, not an error")
    func statusIsAResponse() async throws {
        try await withServerAndEngine { server, engine in
            let result = try await engine.run(Transfer(request: Request(url: url(server, "/status/503?retryAfter=1"))))
            #expect(result.response.statusCode == 503)
            #expect(result.response.headers["Retry-After"] == "1")
            #expect(server.requests.count == 1)
        }
    }

    @Test("redirects are followed; a loop ends with httpTooManyRedirects; an observer may refuse")
    func redirects() async throws {
        try await withServerAndEngine { server, engine in
            let followed = try await engine.run(Transfer(request: Request(url: url(server, "/redirect/3?to=/bytes/10"))))
            #expect(followed.response.statusCode == 200)
            #expect(followed.response.url.path == "/bytes/10")
            #expect(followed.body?.count == 10)

            await expectFerryError(.httpTooManyRedirects) {
                try await engine.run(Transfer(request: Request(url: url(server, "/redirect-loop"))))
            }

            let refusing = RecordingObserver()
            refusing.refuseRedirects = true
            let stopped = try await engine.run(Transfer(request: Request(url: url(server, "/redirect/1?to=/bytes/10"))), observer: refusing)
            #expect(stopped.response.statusCode == 302)
        }
    }

    @Test("httpMaximumConnectionsPerHost is enforced")
    func perHostLimit() async throws {
        try await withServerAndEngine(configure: { $0.maximumConnectionsPerHost = 2 }) { server, engine in
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<10 {
                    group.addTask {
                        try await engine.run(Transfer(request: Request(url: url(server, "/delay/150")))).response.statusCode
                    }
                }
                for try await status in group { #expect(status == 200) }
            }
            #expect(server.maxConcurrentConnections <= 2)
            #expect(server.maxConcurrentConnections >= 1)
        }
    }

    @Test("refused connections, garbage and early closes map to codes a user can switch on")
    func transportErrors() async throws {
        try await withServerAndEngine { server, engine in
            await expectFerryError(.cannotConnectToHost) {
                try await engine.run(Transfer(request: Request(url: URL(string: "http://127.0.0.1:1/")!)))
            }
            await expectFerryError(.unsupportedURL) {
                try await engine.run(Transfer(request: Request(url: URL(string: "ftp://127.0.0.1/x")!)))
            }
            let closed = await expectFerryError(.networkConnectionLost) {
                try await engine.run(Transfer(request: Request(url: url(server, "/close-immediately"))))
            }
            #expect(closed?.attemptOutcome(responseArrived: false, bodyDelivered: false) == .closedBeforeResponse)
            let garbage = try? await engine.run(Transfer(request: Request(url: url(server, "/garbage"))))
            #expect(garbage == nil)
        }
    }

    @Test("cancelling the calling task cancels the transfer")
    func cancellation() async throws {
        try await withServerAndEngine { server, engine in
            let task = Task {
                try await engine.run(Transfer(request: Request(url: url(server, "/bytes/10000000?seed=1&drip=100000"))))
            }
            try await Task.sleep(for: .milliseconds(300))
            task.cancel()
            do {
                _ = try await task.value
                Issue.record("expected cancellation")
            } catch let error as FerryError {
                #expect(error.code == .cancelled)
            }
        }
    }
}

@Suite("Retries never duplicate delivered data")
struct RetryDeliveryTests {
    @Test("an in-memory transfer cut after part of its body was delivered is not retried")
    func noDuplicateChunks() async throws {
        var policy = RetryPolicy.standard
        policy.initialDelay = .milliseconds(10)
        try await withServerAndEngine { server, engine in
            let failure = await expectFerryError(.networkConnectionLost) {
                try await engine.run(Transfer(request: Request(url: url(server, "/bytes/1000000?seed=1&dropAfter=300000")), retry: policy))
            }
            #expect(failure != nil)
            #expect(server.requests.filter { $0.path.hasPrefix("/bytes") }.count == 1)
        }
    }
}
