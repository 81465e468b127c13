import Foundation

/// The compose sheet's logic, as `SLComposeServiceViewController` had it: subclass it, check
/// the text in ``isContentValid()``, start loading attachments in
/// ``presentationAnimationDidFinish()``, and hand the work over in ``didSelectPost()``.
/// ShareKit draws the sheet (a terminal screen, or nothing with `ferry share --post`) and
/// calls these on the main actor: `isContentValid()` after every change of ``contentText``.
///
/// ```swift
/// final class ShareViewController: ComposeServiceController {
///     let maxCharacterCount = 25
///     override func isContentValid() -> Bool {
///         charactersRemaining = maxCharacterCount - contentText.count
///         return charactersRemaining! >= 0
///     }
///     override func didSelectPost() {
///         let task = session.uploadTask(with: request, from: body)
///         task.resume()
///         extensionContext.completeRequest(returningItems: [])
///     }
/// }
/// await ShareExtension.main(ShareViewController.self)
/// ```
@MainActor
open class ComposeServiceController {
    /// The request's items and its ending.
    public let extensionContext: ExtensionContext
    /// The sheet's title (the extension's display name unless set).
    public var title: String = ""
    /// The text the user writes; starts as the shared item's text.
    public var contentText: String = "" {
        didSet { if contentText != oldValue { validateContent() } }
    }
    /// Shown under the text when set; the sheet shows it in red below zero.
    public var charactersRemaining: Int? {
        // Set inside `isContentValid()`: the sheet redraws once validation has answered, so it
        // never shows the new count beside the old Post state (-5 with Post enabled).
        didSet { if !validating { changed?() } }
    }
    private var validating = false
    /// Shown in the empty text field.
    public var placeholder: String?
    /// Whether Post is enabled: the last answer of ``isContentValid()``.
    public private(set) var isPostEnabled = true
    /// How many ``load(_:)`` calls are still running; Post waits for them.
    private var pendingLoads = 0
    private var loadWaiters: [CheckedContinuation<Void, Never>] = []
    /// The sheet redraws when this is called.
    var changed: (() -> Void)?

    public required init(extensionContext: ExtensionContext) {
        self.extensionContext = extensionContext
    }

    /// The sheet is on screen: start loading what the post needs (with ``load(_:)``).
    open func presentationAnimationDidFinish() {}

    /// Whether the content can be posted; called after every change of the text and on
    /// ``validateContent()``. Set ``charactersRemaining`` here.
    open func isContentValid() -> Bool { true }

    /// The user chose Post (and the content is valid): hand the work over, then end the
    /// request with `extensionContext.completeRequest(returningItems:)`.
    open func didSelectPost() {
        extensionContext.completeRequest(returningItems: [])
    }

    /// The user cancelled: the default ends the request as cancelled.
    open func didSelectCancel() {
        extensionContext.cancelRequest(withError: nil)
    }

    /// Asks ``isContentValid()`` again, e.g. once an attachment has loaded.
    public func validateContent() {
        validating = true
        isPostEnabled = isContentValid()
        validating = false
        changed?()
    }

    /// Runs `work` (loading an attachment) on the main actor; Post waits until it is done,
    /// so a post never goes out without what was loading.
    ///
    /// ```swift
    /// override func presentationAnimationDidFinish() {
    ///     load { self.details = try? await self.loadImageDetails() }
    /// }
    /// ```
    public func load(_ work: @escaping @MainActor () async -> Void) {
        pendingLoads += 1
        changed?()
        Task { @MainActor in
            await work()
            self.pendingLoads -= 1
            if self.pendingLoads == 0 {
                let waiters = self.loadWaiters
                self.loadWaiters = []
                for waiter in waiters { waiter.resume() }
            }
            self.validateContent()
        }
    }

    /// Waits for every ``load(_:)`` started so far.
    func finishLoading() async {
        guard pendingLoads > 0 else { return }
        await withCheckedContinuation { loadWaiters.append($0) }
    }

    /// True while a ``load(_:)`` is still running.
    var isLoading: Bool { pendingLoads > 0 }
}
