/// What a server started as a process (`byteclub-server --port 0`) prints about itself.
public enum ServerOutput {
    /// The port of a `listening on http://127.0.0.1:PORT` line in `text`, once the whole line
    /// is there (not a port cut off in the middle of a write).
    ///
    /// ```swift
    /// ServerOutput.listeningPort(in: "listening on http://127.0.0.1:40123\n")  // 40123
    /// ServerOutput.listeningPort(in: "listening on http://127.0.0.1:401")      // nil
    /// ```
    public static func listeningPort(in text: String) -> Int? {
        guard let range = text.range(of: "listening on http://127.0.0.1:") else { return nil }
        let digits = text[range.upperBound...].prefix { $0.isNumber }
        guard text[range.upperBound...].dropFirst(digits.count).first == "\n" else { return nil }
        return Int(digits)
    }
}
