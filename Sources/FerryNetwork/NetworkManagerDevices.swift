/// What NetworkManager says of the devices it knows, by kernel interface name: whether each is
/// metered (`Metered`) and what kind of device it is (`DeviceType`).
struct NetworkManagerDevices: Hashable, Sendable {
    /// `NMMetered`: what a user set on the connection, or NetworkManager's guess (a modem, a
    /// phone's hotspot announcing itself metered).
    enum Metered: UInt32, Hashable, Sendable {
        case unknown = 0, yes = 1, no = 2, guessYes = 3, guessNo = 4

        var isMetered: Bool { self == .yes || self == .guessYes }
    }

    struct Device: Hashable, Sendable {
        var metered: Metered
        /// `NMDeviceType`; ``modem`` is cellular.
        var type: UInt32

        static let modem: UInt32 = 8
        var isModem: Bool { type == Self.modem }
    }

    var devices: [String: Device] = [:]

    init(devices: [String: Device] = [:]) { self.devices = devices }

    /// By interface name. Two devices of one name (a modem's control device and its data
    /// link, say) count as metered, or a modem, if either is.
    init(_ named: [(interface: String, device: Device)]) {
        for (interface, device) in named {
            guard let other = devices[interface] else {
                devices[interface] = device
                continue
            }
            devices[interface] = Device(
                metered: other.metered.isMetered || !device.metered.isMetered ? other.metered : device.metered,
                type: other.isModem ? other.type : device.type)
        }
    }
}
