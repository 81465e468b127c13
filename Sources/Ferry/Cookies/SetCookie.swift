import Foundation

/// Reading `Set-Cookie` (RFC 6265 §5.2, §5.3): one field value into a cookie for the
/// response's URL, or nothing when the field is malformed, too large, or scopes the cookie to
/// a domain the URL is not in. An expired cookie is returned (with its past date): storing it
/// removes the one it names.
enum SetCookie {
    /// Name and value together at most (the size browsers keep, RFC 6265 §6.1).
    static let maximumSize = 4096

    static func parse(_ field: String, from url: URL, now: Date = Date()) -> HTTPCookie? {
        guard let host = url.host?.lowercased(), !host.isEmpty, field.utf8.count <= maximumSize * 2 else { return nil }
        var parts = field.split(separator: ";", omittingEmptySubsequences: false).makeIterator()
        guard let pair = parts.next(), let equals = pair.firstIndex(of: "=") else { return nil }
        let name = pair[..<equals].trimmingCharacters(in: .whitespaces)
        var value = pair[pair.index(after: equals)...].trimmingCharacters(in: .whitespaces)
        if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
        guard !name.isEmpty, name.utf8.count + value.utf8.count <= maximumSize,
            !name.contains(where: { $0.isWhitespace || $0 == "," })
        else { return nil }

        var domain: String?
        var path: String?
        var expires: Date?
        var maximumAge: Double?
        var secure = false
        var httpOnly = false
        var sameSite: HTTPCookieStringPolicy?
        while let attribute = parts.next() {
            let split = attribute.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = split[0].trimmingCharacters(in: .whitespaces).lowercased()
            let argument = split.count > 1 ? split[1].trimmingCharacters(in: .whitespaces) : ""
            switch key {
            case "expires": expires = CookieDate.parse(argument) ?? expires
            case "max-age":
                // Digits with an optional leading minus; anything else is ignored (§5.2.2).
                if let seconds = Int(argument) { maximumAge = Double(seconds) }
            case "domain":
                let trimmed = argument.hasPrefix(".") ? String(argument.dropFirst()) : argument
                if !trimmed.isEmpty { domain = trimmed.lowercased() }
            case "path": path = argument.hasPrefix("/") ? argument : nil
            case "secure": secure = true
            case "httponly": httpOnly = true
            case "samesite": sameSite = HTTPCookieStringPolicy(parsing: argument)
            default: break
            }
        }

        let storedDomain: String
        if let domain {
            // The response's host must be in the domain, and the domain must be more than a
            // bare top-level name; an IP address only ever scopes a cookie to itself.
            guard host == domain || (host.hasSuffix("." + domain) && !isAddress(host)), domain.contains(".") || domain == host
            else { return nil }
            storedDomain = domain == host && isAddress(host) ? host : "." + domain
        } else {
            storedDomain = host
        }
        // Max-Age 0 or less: expired at once (the earliest date there is, §5.2.2).
        let expiry = maximumAge.map { $0 <= 0 ? Date.distantPast : now.addingTimeInterval($0) } ?? expires
        return HTTPCookie(
            name: name, value: value, domain: storedDomain, path: path ?? defaultPath(of: url), expiresDate: expiry,
            isSecure: secure, isHTTPOnly: httpOnly, sameSitePolicy: sameSite, created: now)
    }

    /// The folder of the request's path (RFC 6265 §5.1.4): `/a/b` for `/a/b/c`, `/` for `/c`.
    static func defaultPath(of url: URL) -> String {
        let path = url.path
        guard path.hasPrefix("/"), let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return "/" }
        return String(path[..<slash])
    }

    static func isAddress(_ host: String) -> Bool {
        host.contains(":") || host.split(separator: ".").allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isNumber) }
    }

    /// Splits a value holding several `Set-Cookie` fields joined with commas. A comma starts a
    /// new cookie only when `name=` follows it, and never inside an `Expires` date
    /// (`Expires=Wed, 21 Oct 2026 …`).
    static func split(_ joined: String) -> [String] {
        var fields: [String] = []
        var current = ""
        var rest = Substring(joined)
        while let comma = rest.firstIndex(of: ",") {
            let before = rest[..<comma]
            let after = rest[rest.index(after: comma)...]
            current += before
            let lastAttribute = current.split(separator: ";").last?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
            let inDate = lastAttribute.hasPrefix("expires=") && !lastAttribute.contains(" ") && lastAttribute.count <= "expires=wednesday".count
            let next = after.drop(while: { $0 == " " })
            let startsCookie = next.prefix(while: { $0 != ";" && $0 != "," }).contains("=")
                && !(next.first.map { $0 == "=" } ?? true)
            if startsCookie && !inDate {
                fields.append(current)
                current = ""
            } else {
                current += ","
            }
            rest = after
        }
        current += rest
        fields.append(current)
        return fields.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
}

/// Cookie dates as servers write them (RFC 6265 §5.1.1): tokens in any order, a time
/// `hh:mm:ss`, a day of the month, a month name, a year (two digits: 1970–2069).
enum CookieDate {
    static func parse(_ text: String) -> Date? {
        var time: (Int, Int, Int)?
        var day: Int?
        var month: Int?
        var year: Int?
        let delimiters = CharacterSet(charactersIn: "\t !\"#$%&'()*+,-./;<=>?@[\\]^_`{|}~")
        for token in text.components(separatedBy: delimiters) where !token.isEmpty {
            if time == nil {
                let fields = token.split(separator: ":").map { Int($0.prefix(while: \.isNumber)) }
                if fields.count == 3, let h = fields[0], let m = fields[1], let s = fields[2] {
                    time = (h, m, s)
                    continue
                }
            }
            let digits = token.prefix(while: \.isNumber)
            if day == nil, (1...2).contains(digits.count), let value = Int(digits) {
                day = value
                continue
            }
            if month == nil, let index = months.firstIndex(of: token.prefix(3).lowercased()) {
                month = index + 1
                continue
            }
            if year == nil, (2...4).contains(digits.count), let value = Int(digits) {
                year = value < 70 ? value + 2000 : (value < 100 ? value + 1900 : value)
            }
        }
        guard let (hour, minute, second) = time, let day, let month, let year,
            (1...31).contains(day), year >= 1601, hour <= 23, minute <= 59, second <= 59
        else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar.date(from: DateComponents(year: year, month: month, day: day, hour: hour, minute: minute, second: second))
    }

    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
}
