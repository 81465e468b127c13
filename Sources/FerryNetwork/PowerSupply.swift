import Foundation

/// Whether the machine runs on mains power, from the kernel's power-supply class (what UPower
/// reads): on mains when a `Mains`/`USB` supply is online, or when there is no battery at all
/// (a desktop or a server). Discretionary tasks wait while this is false.
enum PowerSupply {
    /// Where the kernel lists the machine's power supplies.
    static let systemDirectory = URL(fileURLWithPath: "/sys/class/power_supply")

    static func isOnMains(root: URL = systemDirectory) -> Bool {
        let supplies = (try? FileManager.default.contentsOfDirectory(at: root, includingPropertiesForKeys: nil)) ?? []
        var hasBattery = false
        for supply in supplies {
            let type = value("type", of: supply)
            // A wireless mouse's or headset's battery (scope Device) says nothing of the machine's power.
            if value("scope", of: supply) == "Device" { continue }
            if type == "Battery" {
                hasBattery = true
            } else if value("online", of: supply) == "1" {
                return true
            }
        }
        return !hasBattery
    }

    private static func value(_ name: String, of supply: URL) -> String? {
        (try? String(contentsOf: supply.appendingPathComponent(name), encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
