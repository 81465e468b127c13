import Foundation
import GRDB

/// An error from ``FerryStore``: a code to switch on, a message that names the remedy, the
/// database file, and the SQLite or file-system error underneath.
///
/// ```swift
/// do {
///     store = try FerryStore(path: path)
/// } catch let error as FerryStoreError where error.code == .notADatabase {
///     logger.critical("\(error)")  // says to move the file away; ferryd never overwrites it
/// }
/// ```
public struct FerryStoreError: Error, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The file or its folder cannot be opened or created (missing folder, permissions).
        public static let cannotOpen = Code("cannotOpen")
        /// The file at the path is not a SQLite database, or is damaged. It is left untouched.
        public static let notADatabase = Code("notADatabase")
        /// The database was written by a newer ferryd (it has migrations this build does not know).
        public static let databaseTooNew = Code("databaseTooNew")
        /// A migration failed; the database stays at the last version that succeeded.
        public static let migrationFailed = Code("migrationFailed")
        /// No session has this identifier.
        public static let unknownSession = Code("unknownSession")
        /// The session has no task with this identifier.
        public static let unknownTask = Code("unknownTask")
        /// A new task or a change to one breaks a rule of the schema (a value out of range, an
        /// upload without a body file, a reused identifier). Nothing was written.
        public static let invalidTask = Code("invalidTask")
        /// A change the schema refuses, outside of the rules ``invalidTask`` names. Nothing was written.
        public static let constraintViolation = Code("constraintViolation")
        /// A change that would bring a completed, failed or cancelled task back to life.
        public static let invalidTransition = Code("invalidTransition")
        /// The disk is full, read-only, or failing.
        public static let storageFailure = Code("storageFailure")
        /// The store was closed.
        public static let closed = Code("closed")
        /// A stored row cannot be read back (a value this version does not know, a URL that
        /// is not one, JSON that is not a policy): the message names the table and the row.
        public static let unreadableRow = Code("unreadableRow")
        /// Anything else; see ``FerryStoreError/underlyingError``.
        public static let unknown = Code("unknown")
    }

    public var code: Code
    /// What happened and what to do about it.
    public var message: String
    /// The database file.
    public var path: String?
    /// The SQLite (GRDB `DatabaseError`) or file-system error, when there was one.
    public var underlyingError: (any Error)?

    public init(_ code: Code, _ message: String, path: String? = nil, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.path = path
        self.underlyingError = underlying
    }

    /// The code alone, for logs.
    public var shortDescription: String { code.description }

    public var description: String {
        var text = "\(code): \(message)"
        if let path { text += " (\(path))" }
        if let underlyingError { text += " [cause: \(underlyingError)]" }
        return text
    }
}

extension FerryStoreError {
    /// Turns whatever a database operation threw into a ``FerryStoreError``.
    /// Statement arguments are not included: GRDB leaves them out of its errors by default.
    static func wrapping(_ error: any Error, path: String, while doing: String) -> FerryStoreError {
        if let error = error as? FerryStoreError { return error }
        guard let database = error as? DatabaseError else {
            return FerryStoreError(.unknown, "could not \(doing)", path: path, underlying: error)
        }
        let reason = database.message ?? "\(database.resultCode)"
        switch database.resultCode {
        case .SQLITE_CONSTRAINT:
            let rule = reason
            let code: Code = rule.contains("task_") || rule.contains("task.") ? .invalidTask : .constraintViolation
            return FerryStoreError(code, "could not \(doing): the store refused it (\(rule)); nothing was written", path: path, underlying: error)
        case .SQLITE_NOTADB, .SQLITE_CORRUPT:
            return .notADatabase(path: path, underlying: error)
        case .SQLITE_CANTOPEN, .SQLITE_PERM, .SQLITE_AUTH:
            return FerryStoreError(
                .cannotOpen, "cannot open the database: check that its folder exists and belongs to this user", path: path,
                underlying: error)
        case .SQLITE_FULL, .SQLITE_IOERR, .SQLITE_READONLY:
            return FerryStoreError(
                .storageFailure, "could not \(doing): the disk is full, read-only or failing (\(reason)); free space and retry",
                path: path, underlying: error)
        case .SQLITE_MISUSE where reason.contains("closed"):
            return FerryStoreError(.closed, "could not \(doing): the store is closed", path: path, underlying: error)
        default:
            return FerryStoreError(.unknown, "could not \(doing): \(reason)", path: path, underlying: error)
        }
    }

    static func notADatabase(path: String, underlying: (any Error)? = nil) -> FerryStoreError {
        FerryStoreError(
            .notADatabase,
            "the file is not a ferryd database, or is damaged; it was left as it is. Move it away "
                + "(ferryd then starts with an empty store) or restore it from a backup",
            path: path, underlying: underlying)
    }
}
