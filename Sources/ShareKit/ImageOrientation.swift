/// How an image's stored pixels are turned to be shown upright, named and numbered as
/// UIKit's `UIImage.Orientation`: up 0, down 1, left 2, right 3, then the mirrored four.
/// Files say it with an EXIF value 1–8, which ``init(exifOrientation:)`` and
/// ``exifOrientation`` translate.
///
/// ```swift
/// let orientation = ImageOrientation(exifOrientation: 6)   // .right
/// orientation?.rawValue                                    // 3, as UIImage.Orientation.right
/// orientation?.swapsSides                                  // true: shown 480 × 640 from 640 × 480
/// ```
///
/// | UIKit | raw value | EXIF | shown as the stored pixels |
/// |---|---|---|---|
/// | up | 0 | 1 | as they are |
/// | down | 1 | 3 | rotated 180° |
/// | left | 2 | 8 | rotated 90° counterclockwise (270°) |
/// | right | 3 | 6 | rotated 90° clockwise |
/// | upMirrored | 4 | 2 | mirrored horizontally |
/// | downMirrored | 5 | 4 | mirrored vertically |
/// | leftMirrored | 6 | 5 | mirrored horizontally, then rotated 270° |
/// | rightMirrored | 7 | 7 | mirrored horizontally, then rotated 90° |
public enum ImageOrientation: Int, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case up = 0
    case down = 1
    case left = 2
    case right = 3
    case upMirrored = 4
    case downMirrored = 5
    case leftMirrored = 6
    case rightMirrored = 7

    /// The orientation an EXIF `Orientation` tag of `value` means; `nil` outside 1–8.
    ///
    /// ```swift
    /// ImageOrientation(exifOrientation: 8)   // .left
    /// ```
    public init?(exifOrientation value: Int) {
        guard let orientation = Self.allCases.first(where: { $0.exifOrientation == value }) else { return nil }
        self = orientation
    }

    /// The EXIF `Orientation` value, 1–8.
    ///
    /// ```swift
    /// ImageOrientation.right.exifOrientation   // 6
    /// ```
    public var exifOrientation: Int {
        switch self {
        case .up: 1
        case .upMirrored: 2
        case .down: 3
        case .downMirrored: 4
        case .leftMirrored: 5
        case .right: 6
        case .rightMirrored: 7
        case .left: 8
        }
    }

    /// Whether showing the image upright swaps its sides: a quarter turn (left, right and
    /// their mirrors; EXIF 5–8).
    public var swapsSides: Bool { [.left, .right, .leftMirrored, .rightMirrored].contains(self) }

    /// Whether showing the image upright mirrors it (the `…Mirrored` cases; EXIF 2, 4, 5, 7).
    public var isMirrored: Bool { rawValue >= 4 }

    /// UIKit's name for the case: `right`, `upMirrored`.
    public var description: String {
        switch self {
        case .up: "up"
        case .down: "down"
        case .left: "left"
        case .right: "right"
        case .upMirrored: "upMirrored"
        case .downMirrored: "downMirrored"
        case .leftMirrored: "leftMirrored"
        case .rightMirrored: "rightMirrored"
        }
    }

    /// What showing the image upright does to the stored pixels, for people: `rotated 90°`.
    var phrase: String {
        switch self {
        case .up: "as stored"
        case .down: "rotated 180°"
        case .left: "rotated 270°"
        case .right: "rotated 90°"
        case .upMirrored: "mirrored horizontally"
        case .downMirrored: "mirrored vertically"
        case .leftMirrored: "mirrored horizontally and rotated 270°"
        case .rightMirrored: "mirrored horizontally and rotated 90°"
        }
    }
}
