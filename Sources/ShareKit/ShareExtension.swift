import FerryApps
import Foundation

/// A share extension's `main`: reads the request `ferry share` started it with, shows the
/// compose sheet (or posts at once for `--post`), and exits when the extension has ended the
/// request: 0 completed, 1 cancelled, 64 not started by a share sheet.
///
/// ```swift
/// // main.swift of an extension
/// await ShareExtension.main(ShareViewController.self)
/// ```
public enum ShareExtension {
    /// How long an extension may take after Post to end the request before it is cancelled.
    public static let postDeadline: Duration = .seconds(30)

    @MainActor
    public static func main(_ controllerType: ComposeServiceController.Type) async -> Never {
        let request: ShareRequest
        do { request = try ShareRequest.current() } catch {
            FileHandle.standardError.write(Data("\(CommandLine.arguments.first.map { ($0 as NSString).lastPathComponent } ?? "extension"): \(error)\n".utf8))
            exit(64)
        }
        sendStandardErrorToLog(of: request.extensionBundleIdentifier)
        let outcome = await run(controllerType, request: request, resultPath: ProcessInfo.processInfo.environment[ShareRequest.resultVariable])
        exit(outcome.kind == .completed ? 0 : 1)
    }

    /// An extension does not talk to the user's terminal except through the compose sheet:
    /// whatever the process writes to standard error (swift-log's lines from Ferry, libvips'
    /// warnings) goes to `<data>/logs/<bundle id>.extension.log` (0600, appended), so nothing
    /// lands over the sheet or in a script's output; the outcome reaches `ferry share` through
    /// the result file. Left as it is when that file cannot be opened.
    static func sendStandardErrorToLog(of bundleIdentifier: String) {
        guard let folder = try? FerryPaths().prepareLogsDirectory() else { return }
        let path = folder.appendingPathComponent(FerryPaths.fileName(bundleIdentifier) + ".extension.log").path
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        dup2(fd, STDERR_FILENO)
        close(fd)
    }

    /// Runs one request to its end; ``main(_:)`` without the process around it.
    @MainActor
    public static func run(_ controllerType: ComposeServiceController.Type, request: ShareRequest, resultPath: String?,
                           postDeadline: Duration = ShareExtension.postDeadline) async -> ShareOutcome {
        let context = ExtensionContext(inputItems: request.items, bundleIdentifier: request.extensionBundleIdentifier, resultPath: resultPath)
        let controller = controllerType.init(extensionContext: context)
        if controller.title.isEmpty { controller.title = request.extensionName }
        controller.contentText = request.items.first?.contentText ?? ""
        switch request.presentation {
        case .terminal:
            do {
                let terminal = try Terminal()
                await ComposeSheet(controller: controller, terminal: terminal, postDeadline: postDeadline).run()
            } catch {
                context.cancelRequest(withError: error)
            }
        case .post:
            controller.validateContent()
            controller.presentationAnimationDidFinish()
            await controller.finishLoading()
            controller.validateContent()
            if controller.isPostEnabled {
                context.markPostSelected()
                controller.didSelectPost()
            } else {
                var reason = "the content is not valid"
                if let remaining = controller.charactersRemaining, remaining < 0 {
                    reason += ": \(-remaining) character\(remaining == -1 ? "" : "s") too many"
                }
                context.cancelRequest(withError: ShareKitError(reason))
            }
        }
        return await endedOrDeadline(context, deadline: postDeadline)
    }

    /// The outcome, or a cancellation once `limit` has passed without one.
    @MainActor
    private static func endedOrDeadline(_ context: ExtensionContext, deadline limit: Duration) async -> ShareOutcome {
        let deadline = cancel(context, after: limit)
        let outcome = await context.ended()
        deadline.cancel()
        return outcome
    }

    /// Cancels the request when `limit` passes before the extension ends it (the system's
    /// patience with an extension after Post).
    static func cancel(_ context: ExtensionContext, after limit: Duration) -> Task<Void, Never> {
        Task {
            guard (try? await Task.sleep(for: limit)) != nil else { return }
            context.cancelRequest(withError: ShareKitError("the extension did not end the request within \(limit) of Post"))
        }
    }
}
