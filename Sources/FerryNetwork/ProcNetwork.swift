import Foundation
import Glibc

/// Reads links and routes without netlink, for polling where a netlink socket cannot be
/// opened: the namespace's interfaces from `/proc/net/dev` with their flags from
/// `SIOCGIFFLAGS`, routes from `/proc/net/route` and `/proc/net/ipv6_route` (all of them
/// per network namespace, unlike `/sys/class/net`).
enum ProcNetwork {
    static let siocgifflags: UInt = 0x8913
    /// `RTF_UP` and `RTF_REJECT` of a route's flags.
    static let routeUp: UInt32 = 0x1, routeReject: UInt32 = 0x200

    static func read(root: String = "/proc/net") throws -> NetworkPath {
        var path = NetworkPath()
        let probe = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard probe >= 0 else { throw RouteNetlink.Failure(call: "socket(AF_INET)", errno: errno) }
        defer { close(probe) }
        // "  eth0: 123 ..." after two header lines.
        for line in try lines(of: "\(root)/dev").dropFirst(2) {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces)
            guard let flags = interfaceFlags(name, probe: probe) else { continue }
            path.links[name] = NetworkPath.Link(
                name: name, isUp: flags & RouteNetlink.ifUp != 0 && flags & RouteNetlink.ifRunning != 0,
                isLoopback: flags & RouteNetlink.ifLoopback != 0)
        }
        // Iface Destination Gateway Flags RefCnt Use Metric Mask ...: addresses and flags in
        // little-endian hex, the metric in decimal.
        for line in try lines(of: "\(root)/route").dropFirst() {
            let fields = line.split(whereSeparator: \.isWhitespace)
            guard fields.count >= 8, let destination = UInt32(fields[1], radix: 16), let flags = UInt32(fields[3], radix: 16),
                let metric = UInt32(fields[6]), let mask = UInt32(fields[7], radix: 16),  // the metric is decimal
                flags & routeUp != 0, flags & routeReject == 0
            else { continue }
            path.routes.append(NetworkPath.Route(
                destination: withUnsafeBytes(of: destination) { Array($0) }, prefixLength: mask.nonzeroBitCount,
                link: String(fields[0]), metric: metric))
        }
        // Destination PrefixLength Source SourceLength NextHop Metric RefCnt Use Flags Iface: hex.
        for line in (try? lines(of: "\(root)/ipv6_route")) ?? [] {
            let fields = line.split(whereSeparator: \.isWhitespace)
            guard fields.count >= 10, fields[0].count == 32, let prefixLength = Int(fields[1], radix: 16),
                let metric = UInt32(fields[5], radix: 16), let flags = UInt32(fields[8], radix: 16),
                flags & routeUp != 0, flags & routeReject == 0
            else { continue }
            let hex = Array(fields[0].utf8)
            let destination = stride(from: 0, to: 32, by: 2).compactMap { UInt8(String(decoding: hex[$0..<$0 + 2], as: UTF8.self), radix: 16) }
            let link = String(fields[9])
            // The local table's own addresses are listed on their interface with a /128 prefix.
            let isLocal = prefixLength == 128 && path.links[link]?.isLoopback == false && flags & 0x80000000 != 0
            path.routes.append(NetworkPath.Route(destination: destination, prefixLength: prefixLength, link: link, metric: metric, isLocal: isLocal))
        }
        return path
    }

    private static func lines(of file: String) throws -> [Substring] {
        try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n")
    }

    /// The interface's `IFF_*` flags, nil if it went away meanwhile.
    private static func interfaceFlags(_ name: String, probe: Int32) -> UInt32? {
        var request = ifreq()
        let fits = withUnsafeMutableBytes(of: &request.ifr_ifrn.ifrn_name) { buffer in
            let bytes = Array(name.utf8)
            guard bytes.count < buffer.count else { return false }
            buffer.copyBytes(from: bytes)
            return true
        }
        guard fits, ioctl(probe, siocgifflags, &request) == 0 else { return nil }
        return UInt32(UInt16(bitPattern: request.ifr_ifru.ifru_flags))
    }
}
