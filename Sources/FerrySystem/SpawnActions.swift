#if canImport(Glibc)
public import Glibc
#elseif canImport(Musl)
public import Musl
#endif

/// glibc's `posix_spawn` file actions that Swift cannot see, looked up at run time. Used where
/// Ferry starts programs that may outlive the moment: ferryd launching an app (`AppLauncher`),
/// a client starting ferryd (`DaemonStarter`), and the tests' `SpawnedProcess` (SwiftNIO's
/// sockets are not close-on-exec, so a child would otherwise hold them open).
///
/// ```swift
/// var actions = posix_spawn_file_actions_t()
/// posix_spawn_file_actions_init(&actions)
/// SpawnActions.closeOthers(&actions)   // the child keeps only 0, 1 and 2
/// ```
public enum SpawnActions {
    /// `posix_spawn_file_actions_addclosefrom_np(3)` (glibc ≥ 2.34): every descriptor above 2
    /// closes in the child, so a lock, a socket or a pipe a parent waits on for EOF does not
    /// live on in a program that runs for hours. Without it only close-on-exec ones close.
    public static func closeOthers(_ actions: inout posix_spawn_file_actions_t) {
        typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else { return }
        _ = unsafeBitCast(symbol, to: AddCloseFrom.self)(&actions, 3)
    }

    /// `posix_spawn_file_actions_addchdir_np(3)` (glibc ≥ 2.29): the child starts in
    /// `directory`. Without it the child starts in the parent's folder.
    public static func changeDirectory(_ actions: inout posix_spawn_file_actions_t, to directory: String) {
        typealias AddChangeDirectory = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addchdir_np") else { return }
        _ = unsafeBitCast(symbol, to: AddChangeDirectory.self)(&actions, directory)
    }
}
