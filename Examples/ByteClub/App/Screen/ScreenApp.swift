import ByteClubKit
import FerrySystem
import Foundation
import NIOConcurrencyHelpers

/// `byteclub` with no command: the tutorial's app full screen, two tabs (Notes, Photos). It
/// follows window resizes and shows what other members add without a refresh (the service's
/// change feed is long-polled the whole time).
struct ScreenApp {
    let club: ByteClub

    /// What changes the screen.
    enum Event: Sendable {
        case key(Key)
        case resized
        case changed
        case loaded(notes: [Note], photos: [Photo])
        case thumbnail(key: String, file: URL)
        case opened(name: String, text: String)
        case said(String)
        case uploadProgress(TransferProgress)
        case uploadEnded(String)
    }

    func run() async throws {
        // Killed politely (SIGTERM, a closed terminal's SIGHUP): the terminal is put back first.
        // Caught before the terminal is taken, which happens under the same lock: no moment
        // leaves it raw and on the alternate screen.
        let taken = NIOLockedValueBox<TerminalSession?>(nil)
        let endings = Signals.handle([SIGTERM, SIGHUP]) { number in
            taken.withLockedValue { $0?.leave(forGood: true) }
            exit(128 + number)
        }
        defer { endings.stop() }
        let terminal = try taken.withLockedValue { taken in
            let terminal = try TerminalSession()
            taken = terminal
            return terminal
        }
        defer { terminal.leave(forGood: true) }
        let (events, post) = AsyncStream.makeStream(of: Event.self)
        let resizes = Signals.handle([SIGWINCH]) { _ in post.yield(.resized) }
        defer { resizes.stop() }

        var screen = ClubScreen()
        var upload: Task<Void, Never>?
        defer { upload?.cancel() }
        let title = (club.account.member.map { "\($0) at " } ?? "") + (club.account.server.host ?? club.account.server.absoluteString)
        let images = InlineImages.detect()
        var drawnPicture: String?
        func draw() {
            let size = terminal.size
            let renderer = ScreenRenderer(width: size.width, height: size.height, title: title)
            let picture = renderer.picture(screen, images: images)
            // A picture stays on a terminal until cleared: clear when it changes.
            if picture != (drawnPicture ?? "") {
                terminal.write((images == .kitty ? "\u{1B}_Ga=d\u{1B}\\" : "") + "\u{1B}[2J")
            }
            terminal.write(renderer.draw(screen) + picture)
            drawnPicture = picture
        }

        await withDiscardingTaskGroup { group in
            group.addTask {
                for await key in terminal.keys() { post.yield(.key(key)) }
            }
            group.addTask {
                for await _ in club.changes() { post.yield(.changed) }
            }
            group.addTask { await reload(post) }
            draw()
            loop: for await event in events {
                switch event {
                case .key(let key):
                    for effect in screen.press(key) {
                        switch effect {
                        case .quit: break loop
                        case .reload: group.addTask { await reload(post) }
                        case .open(let name): group.addTask { await open(name, post) }
                        case .write(let name): await write(noteName(name), current: nil, terminal, post)
                        case .edit(let name): await edit(name, terminal, post)
                        case .cancelUpload: upload?.cancel()
                        case .fetchThumbnails(let photos): fetch(photos, into: &group, post)
                        case .upload(let path):
                            let file = URL(fileURLWithPath: (path as NSString).expandingTildeInPath)
                            screen.upload = ClubScreen.Upload(name: file.lastPathComponent, progress: TransferProgress(bytes: 0, expected: -1), started: Date())
                            upload = Task { await send(file, post) }
                        }
                    }
                case .resized: terminal.write("\u{1B}[2J")
                case .changed: group.addTask { await reload(post) }
                case .loaded(let notes, let photos): screen.show(notes: notes, photos: photos)
                case .thumbnail(let key, let file): screen.thumbnails[key] = file
                case .opened(let name, let text): screen.mode = .reading(name: name, text: text, top: 0)
                case .said(let message): screen.status = message
                case .uploadProgress(let progress): screen.upload?.progress = progress
                case .uploadEnded(let message):
                    screen.upload = nil
                    upload = nil
                    screen.status = message
                    group.addTask { await reload(post) }
                }
                for effect in screen.thumbnailsToFetch(height: terminal.size.height) {
                    if case .fetchThumbnails(let photos) = effect { fetch(photos, into: &group, post) }
                }
                draw()
            }
            post.finish()
            group.cancelAll()
        }
    }

    // MARK: The work keys start

    /// Download tasks for the thumbnails of `photos` (the cache answers those it has).
    private func fetch(_ photos: [Photo], into group: inout DiscardingTaskGroup, _ post: AsyncStream<Event>.Continuation) {
        for photo in photos {
            group.addTask {
                if let file = await club.thumbnail(for: photo) { post.yield(.thumbnail(key: ClubScreen.thumbnailKey(photo), file: file)) }
            }
        }
    }

    private func reload(_ post: AsyncStream<Event>.Continuation) async {
        do {
            async let notes = club.notes()
            async let photos = club.photos()
            post.yield(.loaded(notes: try await notes, photos: try await photos))
        } catch {
            post.yield(.said("\(error)"))
        }
    }

    private func open(_ name: String, _ post: AsyncStream<Event>.Continuation) async {
        do {
            let (text, _) = try await club.readNote(named: name)
            post.yield(.opened(name: name, text: text))
        } catch {
            post.yield(.said("\(error)"))
        }
    }

    private func edit(_ name: String, _ terminal: TerminalSession, _ post: AsyncStream<Event>.Continuation) async {
        do {
            let (text, metadata) = try await club.readNote(named: name)
            await write(name, current: (text, metadata.rev), terminal, post)
        } catch {
            post.yield(.said("\(error)"))
        }
    }

    /// Runs the editor on `current`'s text (empty for a new note) and saves what it leaves.
    private func write(_ name: String, current: (text: String, rev: String?)?, _ terminal: TerminalSession,
                       _ post: AsyncStream<Event>.Continuation) async {
        do {
            let initial = current?.text ?? ""
            let text = try await terminal.suspend { try noteText(editing: initial, fromStandardInput: false) }
            guard text != initial else {
                post.yield(.said("\(name) unchanged"))
                return
            }
            let saved = try await club.saveNote(named: name, text: text, parentRev: current?.rev)
            post.yield(.said(saved.isConflictedCopy
                ? "\(name) changed meanwhile; yours is kept as \(saved.metadata.name)"
                : "Saved \(saved.metadata.name)"))
            await reload(post)
        } catch {
            post.yield(.said("\(error)"))
        }
    }

    private func send(_ file: URL, _ post: AsyncStream<Event>.Continuation) async {
        do {
            let stored = try await club.uploadPhoto(file) { post.yield(.uploadProgress($0)) }
            post.yield(.uploadEnded("Uploaded \(file.lastPathComponent) as \(stored.name)"))
        } catch ByteClubError.cancelled {
            post.yield(.uploadEnded("Upload of \(file.lastPathComponent) cancelled; nothing was kept"))
        } catch {
            post.yield(.uploadEnded("\(error)"))
        }
    }
}
