import CVips
import Foundation

/// Pictures in the terminal: the kitty graphics protocol or sixel, whichever the terminal
/// speaks; anything else gets none (and `photos --sheet` makes a contact sheet instead).
enum InlineImages: String, CaseIterable {
    case kitty
    case sixel

    /// What the terminal on standard output speaks. `BYTECLUB_IMAGES` (`kitty`, `sixel`, `none`)
    /// decides when set; else kitty's own variables and `TERM` names, else the terminal is asked
    /// for its attributes (DA1: a `4` among them means sixel) when it is a terminal at all.
    static func detect(environment: [String: String] = ProcessInfo.processInfo.environment) -> InlineImages? {
        if let chosen = environment["BYTECLUB_IMAGES"] { return InlineImages(rawValue: chosen) }
        guard isatty(STDOUT_FILENO) == 1 else { return nil }
        let term = environment["TERM"] ?? ""
        if environment["KITTY_WINDOW_ID"] != nil || term == "xterm-kitty" || ["WezTerm", "ghostty"].contains(environment["TERM_PROGRAM"] ?? "") {
            return .kitty
        }
        if term.contains("sixel") || term.hasPrefix("foot") || term.hasPrefix("mlterm") { return .sixel }
        return TerminalQuery.primaryAttributes()?.contains(4) == true ? .sixel : nil
    }

    /// The escape sequence that shows the image at `file` scaled down to fit `width` x `height`
    /// pixels, or nil when it cannot be decoded.
    func sequence(for file: URL, width: Int, height: Int) -> String? {
        guard cvips_start_as("byteclub") == 0 else { return nil }
        var pixels: UnsafeMutableRawPointer?
        var w: Int32 = 0
        var h: Int32 = 0
        guard cvips_rgb_file(file.path, Int32(width), Int32(height), &pixels, &w, &h) == 0, let pixels else { return nil }
        defer { cvips_free(pixels) }
        let rgb = UnsafeRawBufferPointer(start: pixels, count: Int(w) * Int(h) * 3)
        switch self {
        case .kitty: return Self.kitty(rgb, width: Int(w), height: Int(h))
        case .sixel: return Self.sixel(rgb, width: Int(w), height: Int(h))
        }
    }

    /// Kitty: RGB pixels, base64 in chunks of 4096, `q=2` so the terminal sends no answer.
    static func kitty(_ rgb: UnsafeRawBufferPointer, width: Int, height: Int) -> String {
        let payload = Data(rgb).base64EncodedString()
        var out = ""
        var start = payload.startIndex
        var first = true
        while start < payload.endIndex {
            let end = payload.index(start, offsetBy: 4096, limitedBy: payload.endIndex) ?? payload.endIndex
            let more = end < payload.endIndex ? 1 : 0
            let keys = first ? "a=T,f=24,s=\(width),v=\(height),q=2,m=\(more)" : "m=\(more)"
            out += "\u{1B}_G\(keys);\(payload[start..<end])\u{1B}\\"
            start = end
            first = false
        }
        return out + "\n"
    }

    /// Sixel with a 6×6×6 colour cube: each pixel to its nearest cube colour, each band of six
    /// rows written colour by colour with run-length encoding.
    static func sixel(_ rgb: UnsafeRawBufferPointer, width: Int, height: Int) -> String {
        func level(_ value: UInt8) -> Int { (Int(value) * 5 + 127) / 255 }
        var indices = [UInt8](repeating: 0, count: width * height)
        var used = Set<UInt8>()
        for pixel in 0..<(width * height) {
            let index = UInt8(level(rgb[pixel * 3]) * 36 + level(rgb[pixel * 3 + 1]) * 6 + level(rgb[pixel * 3 + 2]))
            indices[pixel] = index
            used.insert(index)
        }
        var out = "\u{1B}P0;1;0q\"1;1;\(width);\(height)"
        for index in used.sorted() {
            let (r, g, b) = (Int(index) / 36, Int(index) / 6 % 6, Int(index) % 6)
            out += "#\(index);2;\(r * 20);\(g * 20);\(b * 20)"
        }
        for top in stride(from: 0, to: height, by: 6) {
            let rows = min(6, height - top)
            var colours = Set<UInt8>()
            for row in 0..<rows { for x in 0..<width { colours.insert(indices[(top + row) * width + x]) } }
            for (n, colour) in colours.sorted().enumerated() {
                if n > 0 { out += "$" }
                out += "#\(colour)"
                var run: (char: Character, count: Int)?
                func flush() {
                    guard let current = run else { return }
                    out += current.count > 3 ? "!\(current.count)\(current.char)" : String(repeating: current.char, count: current.count)
                }
                for x in 0..<width {
                    var bits = 0
                    for row in 0..<rows where indices[(top + row) * width + x] == colour { bits |= 1 << row }
                    let char = Character(UnicodeScalar(UInt8(63 + bits)))
                    if run?.char == char { run!.count += 1 } else { flush(); run = (char, 1) }
                }
                flush()
            }
            out += "-"
        }
        return out + "\u{1B}\\\n"
    }
}

/// Asks the terminal on standard input/output a question and reads its answer, in raw mode
/// for at most 200 ms (a terminal that does not answer costs that, once).
enum TerminalQuery {
    /// The primary device attributes (`ESC [ c` → `ESC [ ? 62 ; 4 ; … c`).
    static func primaryAttributes() -> [Int]? {
        guard isatty(STDIN_FILENO) == 1, let answer = ask("\u{1B}[c", until: "c") else { return nil }
        guard let start = answer.range(of: "[?") else { return nil }
        return answer[start.upperBound...].dropLast().split(separator: ";").compactMap { Int($0) }
    }

    static func ask(_ question: String, until terminator: Character) -> String? {
        var saved = termios()
        guard tcgetattr(STDIN_FILENO, &saved) == 0 else { return nil }
        var raw = saved
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        guard tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0 else { return nil }
        defer { tcsetattr(STDIN_FILENO, TCSANOW, &saved) }
        FileHandle.standardOutput.write(Data(question.utf8))
        var answer = ""
        let deadline = Date().addingTimeInterval(0.2)
        while Date() < deadline {
            var reader = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
            let left = Int32(max(1, deadline.timeIntervalSinceNow * 1000))
            guard poll(&reader, 1, left) > 0 else { break }
            var byte: UInt8 = 0
            guard read(STDIN_FILENO, &byte, 1) == 1 else { break }
            answer.append(Character(UnicodeScalar(byte)))
            if answer.last == terminator && answer.count > 2 { return answer }
        }
        return nil
    }
}

/// `photos --sheet FILE.jpg`: the thumbnails in a grid with their names, by libvips.
enum ContactSheet {
    static func write(_ pictures: [(file: URL, label: String)], to output: URL, cell: Int = 160) throws {
        guard cvips_start_as("byteclub") == 0 else {
            throw SheetError(description: "libvips is needed for contact sheets: \(String(cString: cvips_load_error()))")
        }
        guard !pictures.isEmpty else { throw SheetError(description: "no thumbnails to put on a sheet") }
        let paths = pictures.map { strdup($0.file.path) }
        let labels = pictures.map { strdup($0.label) }
        defer { (paths + labels).forEach { free($0) } }
        var error = [CChar](repeating: 0, count: 512)
        let across = Int32(min(pictures.count, 5))
        let made = paths.map { UnsafePointer($0) }.withUnsafeBufferPointer { pathList in
            labels.map { UnsafePointer($0) }.withUnsafeBufferPointer { labelList in
                cvips_contact_sheet(pathList.baseAddress, labelList.baseAddress, Int32(pictures.count), Int32(cell), across,
                                    output.path, &error, error.count)
            }
        }
        guard made == 0 else { throw SheetError(description: "cannot write \(output.path): \(String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))") }
    }

    struct SheetError: Error, CustomStringConvertible { var description: String }
}
