import Ferry
import Foundation

extension ByteClub {
    /// How long one long-poll waits at the service before it answers "no changes".
    public static let longPollSeconds = 30

    /// Tells each time something in the club's folder changed — a note another member added,
    /// a photo uploaded — by long-polling the service's change feed (`longpoll_delta`, then
    /// `delta` to move the cursor), as the tutorial's Dropbox did. It runs until the calling task
    /// is cancelled; when the service cannot be reached it tries again every few seconds.
    ///
    /// ```swift
    /// for try await _ in club.changes() { try await reload() }
    /// ```
    public func changes(pollSeconds: Int = ByteClub.longPollSeconds) -> AsyncStream<Void> {
        AsyncStream { continuation in
            let watcher = Task {
                var cursor: String?
                while !Task.isCancelled {
                    do {
                        guard let current = cursor else {
                            cursor = try await latestCursor()
                            continue
                        }
                        let poll = try await longPoll(cursor: current, seconds: pollSeconds)
                        if poll.changes {
                            cursor = try await latestCursor(from: current)
                            continuation.yield()
                        }
                        if let backoff = poll.backoff { try await Task.sleep(for: .seconds(backoff)) }
                    } catch is CancellationError {
                        break
                    } catch ByteClubError.cancelled {
                        break
                    } catch {
                        // The server is down or the cursor was refused: start again shortly.
                        cursor = nil
                        try? await Task.sleep(for: .seconds(3))
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in watcher.cancel() }
        }
    }

    /// One page of `POST /1/delta`.
    struct DeltaPage: Decodable {
        var cursor: String
        var hasMore: Bool
        var reset: Bool

        enum CodingKeys: String, CodingKey {
            case cursor, reset
            case hasMore = "has_more"
        }
    }

    /// The cursor after every change so far (from `cursor`, or from the beginning), following
    /// `has_more`; the entries themselves are not needed: the app lists again.
    func latestCursor(from cursor: String? = nil) async throws -> String {
        var cursor = cursor
        for _ in 0..<10_000 {
            var request = URLRequest(url: routes.delta)
            request.httpMethod = "POST"
            request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
            var form = "path_prefix=" + ("/" + ClubRoutes.folder).addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            if let cursor { form += "&cursor=" + cursor.addingPercentEncoding(withAllowedCharacters: .alphanumerics)! }
            request.httpBody = Data(form.utf8)
            let page: DeltaPage = try await fetchJSON(request, what: "the club's changes")
            cursor = page.cursor
            if !page.hasMore { return page.cursor }
        }
        throw ByteClubError.server(status: 200, "the change feed never ends (has_more for 10,000 pages)")
    }

    struct LongPoll: Decodable {
        var changes: Bool
        var backoff: Int?
    }

    func longPoll(cursor: String, seconds: Int) async throws -> LongPoll {
        var request = URLRequest(url: routes.longpollDelta(cursor: cursor, timeout: seconds))
        // The service holds the request up to `seconds` (plus its jitter, up to 90 s at Dropbox).
        request.timeoutInterval = TimeInterval(seconds + 90)
        return try await fetchJSON(request, what: "the club's change feed")
    }
}
