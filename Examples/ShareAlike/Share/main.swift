import ExampleSupport
import Ferry
import Foundation
import ShareAlikeKit
import ShareKit

// sharealike-share: ShareAlike's share extension, the tutorial's ShareViewController.
// The text is limited to 25 characters; on Post it sends {text, image_details} as JSON to the
// request bin through the group's background session, then completes the request at once:
// ferryd carries the post, and relaunches the ShareAlike app to record how it went.
@MainActor
final class ShareViewController: ComposeServiceController {
    private var imageDetails: Post.ImageSummary?
    private var settings: Settings?
    /// Made while the sheet is shown, so Post only submits the task and leaves.
    private var session: URLSession?

    override func presentationAnimationDidFinish() {
        placeholder = "Say something about it"
        load {
            do {
                self.settings = Settings.load()
                self.session = try ShareAlike.group.makeSession(delegate: PostsDelegate(role: "extension"))
            } catch {
                self.extensionContext.cancelRequest(withError: error)
                return
            }
            // The tutorial's loadItem(forTypeIdentifier: kUTTypeImage): the first image attached.
            let attachments = self.extensionContext.inputItems.flatMap(\.attachments)
            guard let image = attachments.first(where: { $0.hasItemConforming(toTypeIdentifier: .image) }) else { return }
            do {
                guard case .file(let file) = try await image.loadItem(forTypeIdentifier: .image) else { return }
                let details = try await Task.detached { try ImageDetails.read(fileAt: file) }.value
                // As the tutorial read them from a UIImage: the size as shown, UIImage.Orientation's number.
                self.imageDetails = Post.ImageSummary(height: details.height, width: details.width, orientation: details.orientation.rawValue,
                                                      scale: details.scale, description: details.description)
            } catch {
                FileHandle.standardError.write(Data("sharealike-share: cannot read the image: \(error)\n".utf8))
            }
        }
    }

    override func isContentValid() -> Bool {
        let remaining = ShareAlike.maxCharacterCount - contentText.count
        charactersRemaining = remaining
        return remaining >= 0
    }

    override func didSelectPost() {
        guard let settings, let session else {
            extensionContext.cancelRequest(withError: ExampleError("ShareAlike has no request bin yet: run `sharealike setup`"))
            return
        }
        do {
            let post = Post(text: contentText, image_details: imageDetails)
            let body = try JSONEncoder().encode(post)
            // From Data: the bytes are written into the group's container, where ferryd reads them.
            let task = session.uploadTask(with: ShareAlike.postRequest(to: settings.binURL), from: body)
            task.resume()  // in ferryd's store when this returns
            try ShareAlike.history().append(HistoryEntry(event: .posted, task: task.taskIdentifier, post: post, bin: settings.binURL.absoluteString))
            extensionContext.completeRequest(returningItems: [])
        } catch {
            extensionContext.cancelRequest(withError: error)
        }
    }
}

await ShareExtension.main(ShareViewController.self)
