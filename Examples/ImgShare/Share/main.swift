import ExampleSupport
import Ferry
import Foundation
import ImgShareKit
import ShareKit

// imgshare-share: ImgShare's share extension. One image; the text is its title. On Post the
// image is copied into the group's outbox and uploaded from there to the Imgur-shaped API
// with the app's Client-ID, through the group's background session; then the request is
// completed at once. ferryd carries the upload and relaunches ImgShare to record the link.
@MainActor
final class ShareViewController: ComposeServiceController {
    private var image: (file: URL, type: TypeIdentifier)?
    private var settings: Settings?
    /// Made while the sheet is shown, so Post only submits the upload and leaves.
    private var session: URLSession?
    private let service = ImgurService(fallback: { result, task in ImgurService.record(result, task: task, handledBy: "extension") })

    override func presentationAnimationDidFinish() {
        placeholder = "Title (optional)"
        load {
            do {
                self.settings = try ImgShare.settings().load()
                self.session = try ImgShare.group.makeSession(delegate: self.service)
                let attachments = self.extensionContext.inputItems.flatMap(\.attachments)
                guard let provider = attachments.first(where: { $0.hasItemConforming(toTypeIdentifier: .image) }),
                      case .file(let file) = try await provider.loadItem(forTypeIdentifier: .image),
                      let type = provider.registeredTypeIdentifiers.first
                else { throw ExampleError("there is no image to upload") }
                self.image = (file, type)
            } catch {
                self.extensionContext.cancelRequest(withError: error)
            }
        }
    }

    override func isContentValid() -> Bool {
        let remaining = ImgShare.maxTitleLength - contentText.count
        charactersRemaining = remaining < 20 ? remaining : nil  // shown only near the limit
        return remaining >= 0
    }

    override func didSelectPost() {
        guard let settings, let session else {
            extensionContext.cancelRequest(withError: ExampleError("ImgShare is not set up: run `imgshare setup --server URL --client-id ID`"))
            return
        }
        guard let image else { return extensionContext.cancelRequest(withError: ExampleError("there is no image to upload")) }
        do {
            // The outbox copy is what ferryd reads; its name travels as the task's description.
            let name = UUID().uuidString.lowercased() + "." + (image.type.preferredFilenameExtension ?? "img")
            let copy = try ImgShare.outbox().appendingPathComponent(name)
            try FileManager.default.copyItem(at: image.file, to: copy)
            let task = service.upload(copy, contentType: image.type.preferredMIMEType ?? "application/octet-stream", title: contentText,
                                      settings: settings, session: session) { result, task in
                ImgurService.record(result, task: task, handledBy: "extension")
            }
            task.taskDescription = name
            task.resume()  // in ferryd's store when this returns
            extensionContext.completeRequest(returningItems: [])
        } catch {
            extensionContext.cancelRequest(withError: error)
        }
    }
}

await ShareExtension.main(ShareViewController.self)
