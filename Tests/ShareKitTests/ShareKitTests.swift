import Testing
@testable import ShareKit
