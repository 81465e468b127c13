import FerryCore
import FerryProtocol
import FerryStore
import Foundation
import Logging

// What ferryd hands over itself: a finished download to its `deliverTo` (docs/cli.md, the
// `ferry download` rule), and the events of a session that keeps none for a later owner.
extension Daemon {
    /// Where a completed download ends up: moved to its `deliverTo` (or the first free name
    /// beside it, `Delivery`) when the server answered below 400; nil when it stays where it
    /// was written (no `deliverTo`, or an error page: the task counts as failed, and the file
    /// goes as any file ferryd chose, once its events are acknowledged).
    func placeDownload(_ file: URL, of record: TaskRecord, status: Int, logger: Logger) async throws(Delivery.Failure) -> String? {
        guard let target = record.deliverTo, status < 400 else { return nil }
        let placed = try await Delivery.move(file.path, to: target)
        logger.info("download delivered", metadata: ["renamed": "\(placed != target)"])
        return placed
    }

    /// Checks a submission's `deliverTo` as ferryd, the user's own process, can write it.
    func checkDelivery(of submission: TaskSubmission) async throws {
        guard let target = submission.deliverTo else { return }
        if let problem = await Delivery.problem(with: target) {
            throw FerryProtocolError(.cannotWriteToFile, problem)
        }
    }

    /// Deletes the session's events up to `sequence` (and the `single` ones after it), as the
    /// owner's `acknowledge` does: a downloaded file still in ferryd's own downloads folder is
    /// deleted with its event, as the platform does; a path the app or the user named stays.
    /// Returns how many events went.
    @discardableResult
    func acknowledgeEvents(in session: String, upTo sequence: Int64, also single: Set<Int64> = []) async throws -> Int {
        let done = try await store.acknowledging(session: session, upTo: sequence, also: single.sorted(), returning: "downloadFinished")
        for file in try await downloadedFiles(done.removedOfKind, of: session) { try? FileManager.default.removeItem(at: file) }
        if !done.eventsLeft {
            // Everything delivered: the launch backoff starts afresh next time.
            update(session) { presence in
                presence.launch?.timer?.stop()
                presence.launch = nil
            }
        }
        return done.removed
    }

    /// A session that keeps no events for a later owner (`keepsEvents` false: the CLI's), with
    /// nobody owning it: ferryd acknowledges what was stored, since nobody will come for it (a
    /// session of no app is never launched). Returns whether the session is such a one.
    func settleUnclaimedEvents(of session: SessionRecord) async -> Bool {
        guard !session.keepsEvents, Self.isUnregistered(session.appBundleIdentifier) else { return false }
        do {
            // An owner that attached meanwhile gets them (it acknowledges itself).
            guard let last = try await store.lastEventSequence(in: session.identifier), owner(of: session.identifier) == nil else { return true }
            let removed = try await acknowledgeEvents(in: session.identifier, upTo: last)
            logger.debug("acknowledged events nobody owns", metadata: ["session": "\(session.identifier)", "removed": "\(removed)"])
        } catch {
            logger.warning("cannot acknowledge unclaimed events", metadata: ["session": "\(session.identifier)", "error": "\(error)"])
        }
        return true
    }

    /// The files of `downloadFinished` events that lie in ferryd's own downloads folder of the
    /// session's container (a path the app or the user named is theirs).
    private func downloadedFiles(_ events: [EventRecord], of session: String) async throws -> [URL] {
        guard !events.isEmpty, let record = try await store.session(session) else { return [] }
        let folder = downloadsFolder(of: record)
        return events.compactMap { event in
            guard case .downloadFinished(let finished)? = try? event.event().kind,
                Self.isInside(finished.location, standardizedFolder: folder)
            else { return nil }
            return URL(fileURLWithPath: finished.location)
        }
    }
}
