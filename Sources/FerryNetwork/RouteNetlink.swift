import Glibc

/// Reads links and routes from the kernel over rtnetlink (`NETLINK_ROUTE`), and opens the
/// socket that hears about their changes. Only what ferryd needs is parsed: a link's name and
/// flags, a route's destination, prefix, output link, metric, table and type.
enum RouteNetlink {
    struct Failure: Error, CustomStringConvertible {
        var call: String
        var errno: Int32
        var description: String { "\(call): \(String(cString: strerror(errno)))" }
    }

    // linux/netlink.h, linux/rtnetlink.h, linux/if.h: the few constants used.
    static let netlinkRoute: Int32 = 0
    static let done: UInt16 = 3, error: UInt16 = 2
    static let newLink: UInt16 = 16, getLink: UInt16 = 18, newRoute: UInt16 = 24, getRoute: UInt16 = 26
    static let request: UInt16 = 0x1, dump: UInt16 = 0x300
    static let ifUp: UInt32 = 0x1, ifLoopback: UInt32 = 0x8, ifRunning: UInt32 = 0x40
    static let linkNameAttribute: UInt16 = 3
    static let routeDestination: UInt16 = 1, routeOutputLink: UInt16 = 4, routePriority: UInt16 = 6
    static let routeMultipath: UInt16 = 9, routeTable: UInt16 = 15
    static let unicast: UInt8 = 1, local: UInt8 = 2
    static let mainTable: UInt32 = 254, localTable: UInt32 = 255
    static let linkDown: UInt32 = 16, dead: UInt32 = 1
    /// Link, IPv4/IPv6 address and IPv4/IPv6 route changes (the `RTMGRP_*` groups).
    static let changeGroups: UInt32 = 0x1 | 0x10 | 0x40 | 0x100 | 0x400

    /// A socket bound to the change groups: readable when a link, address or route changed.
    static func changeSocket() throws -> Int32 {
        let fd = try open()
        var address = kernelAddress(groups: changeGroups)
        let bound = withUnsafeBytes(of: &address) { bytes in
            bind(fd, bytes.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(bytes.count))
        }
        guard bound == 0 else {
            let code = errno
            close(fd)
            throw Failure(call: "bind(NETLINK_ROUTE)", errno: code)
        }
        return fd
    }

    /// The namespace's links and routes, read by two dumps on a socket of their own.
    static func read() throws -> NetworkPath {
        let fd = try open()
        defer { close(fd) }
        var path = NetworkPath()
        var names: [Int32: String] = [:]
        try dump(getLink, header: 16, on: fd, sequence: 1) { type, body in
            guard type == newLink, body.count >= 16 else { return }
            let index = body.load(at: 4, as: Int32.self)
            let flags = body.load(at: 8, as: UInt32.self)
            var name = "if\(index)"
            attributes(body, from: 16) { kind, value in
                if kind == linkNameAttribute { name = String(decoding: value.prefix { $0 != 0 }, as: UTF8.self) }
            }
            names[index] = name
            path.links[name] = NetworkPath.Link(
                name: name, isUp: flags & ifUp != 0 && flags & ifRunning != 0, isLoopback: flags & ifLoopback != 0)
        }
        try dump(getRoute, header: 12, on: fd, sequence: 2) { type, body in
            guard type == newRoute, body.count >= 12 else { return }
            let family = body[0], prefixLength = Int(body[1]), routeType = body[7]
            let flags = body.load(at: 8, as: UInt32.self)
            guard routeType == unicast || routeType == local, flags & (linkDown | dead) == 0 else { return }
            var table = UInt32(body[4])
            var destination = [UInt8](repeating: 0, count: family == UInt8(AF_INET6) ? 16 : 4)
            var link: Int32?
            var metric: UInt32 = 0
            attributes(body, from: 12) { kind, value in
                switch kind {
                case routeDestination where value.count == destination.count: destination = Array(value)
                case routeOutputLink where value.count >= 4: link = value.load(at: 0, as: Int32.self)
                case routePriority where value.count >= 4: metric = value.load(at: 0, as: UInt32.self)
                case routeTable where value.count >= 4: table = value.load(at: 0, as: UInt32.self)
                case routeMultipath: link = link ?? firstLiveNexthop(value)
                default: break
                }
            }
            guard family == UInt8(AF_INET) || family == UInt8(AF_INET6), table == mainTable || table == localTable,
                let link, let name = names[link]
            else { return }
            path.routes.append(NetworkPath.Route(
                destination: destination, prefixLength: prefixLength, link: name, metric: metric, isLocal: routeType == local))
        }
        return path
    }

    private static func open() throws -> Int32 {
        let fd = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), netlinkRoute)
        guard fd >= 0 else { throw Failure(call: "socket(AF_NETLINK)", errno: errno) }
        return fd
    }

    /// `struct sockaddr_nl` (family, pad, port id, groups), which Glibc's module does not export.
    private static func kernelAddress(groups: UInt32) -> (UInt16, UInt16, UInt32, UInt32) {
        (UInt16(AF_NETLINK), 0, 0, groups)
    }

    /// Sends a dump request with a zeroed family header of `header` bytes and hands each
    /// answer's type and body to `each`, until the kernel says done.
    private static func dump(
        _ type: UInt16, header: Int, on fd: Int32, sequence: UInt32, each: (UInt16, UnsafeRawBufferPointer) -> Void
    ) throws {
        var message = [UInt8](repeating: 0, count: 16 + header)
        message.withUnsafeMutableBytes { bytes in
            bytes.storeBytes(of: UInt32(16 + header), toByteOffset: 0, as: UInt32.self)
            bytes.storeBytes(of: type, toByteOffset: 4, as: UInt16.self)
            bytes.storeBytes(of: request | dump, toByteOffset: 6, as: UInt16.self)
            bytes.storeBytes(of: sequence, toByteOffset: 8, as: UInt32.self)
        }
        var kernel = kernelAddress(groups: 0)
        let sent = message.withUnsafeBytes { bytes in
            withUnsafeBytes(of: &kernel) { address in
                sendto(fd, bytes.baseAddress, bytes.count, 0, address.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(address.count))
            }
        }
        guard sent == message.count else { throw Failure(call: "sendto(NETLINK_ROUTE)", errno: errno) }
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        // A dump ends with NLMSG_DONE; the bound keeps a kernel that never says so from holding ferryd.
        for _ in 0..<10_000 {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else {
                if count < 0, errno == EINTR { continue }
                throw Failure(call: "recv(NETLINK_ROUTE)", errno: count < 0 ? errno : EPIPE)
            }
            var finished = false
            try buffer.withUnsafeBytes { all in
                var offset = 0
                while offset + 16 <= count {
                    let length = Int(all.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
                    let kind = all.loadUnaligned(fromByteOffset: offset + 4, as: UInt16.self)
                    let seq = all.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self)
                    guard length >= 16, offset + length <= count else { break }
                    if seq == sequence {
                        if kind == done { finished = true }
                        if kind == error {
                            let code = length >= 20 ? all.loadUnaligned(fromByteOffset: offset + 16, as: Int32.self) : 0
                            if code != 0 { throw Failure(call: "netlink dump", errno: -code) }
                        }
                        each(kind, UnsafeRawBufferPointer(rebasing: all[(offset + 16)..<(offset + length)]))
                    }
                    offset += (length + 3) & ~3
                }
            }
            if finished { return }
        }
        throw Failure(call: "netlink dump (no end)", errno: EPROTO)
    }

    /// Each `rtattr` (length, type, value) from `start`, aligned to 4 bytes.
    private static func attributes(_ body: UnsafeRawBufferPointer, from start: Int, _ each: (UInt16, UnsafeRawBufferPointer) -> Void) {
        var offset = start
        while offset + 4 <= body.count {
            let length = Int(body.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
            let kind = body.loadUnaligned(fromByteOffset: offset + 2, as: UInt16.self) & 0x3fff
            guard length >= 4, offset + length <= body.count else { return }
            each(kind, UnsafeRawBufferPointer(rebasing: body[(offset + 4)..<(offset + length)]))
            offset += (length + 3) & ~3
        }
    }

    /// The output link of a multipath route's first next hop that is not down (`rtnexthop`:
    /// length, flags, hops, link index).
    private static func firstLiveNexthop(_ value: UnsafeRawBufferPointer) -> Int32? {
        var offset = 0
        while offset + 8 <= value.count {
            let length = Int(value.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
            let flags = UInt32(value[offset + 2])
            guard length >= 8 else { return nil }
            if flags & (linkDown | dead) == 0 { return value.loadUnaligned(fromByteOffset: offset + 4, as: Int32.self) }
            offset += (length + 3) & ~3
        }
        return nil
    }
}

extension UnsafeRawBufferPointer {
    fileprivate func load<T>(at offset: Int, as type: T.Type) -> T { loadUnaligned(fromByteOffset: offset, as: type) }
}
