public import FerryCore
public import FerryEngine

// The value types that an app uses with a `Session` (the engine's and the shared
// vocabulary's), named through `import Ferry` alone. Only these: `TransferEngine`,
// `Transfer`, observers and sleepers are the engine's, used by ferryd and the CLI, and not
// part of Ferry's API.

/// What to send: URL, method, headers, a small body. See ``Session/dataTask(with:)-(Request)``.
public typealias Request = FerryEngine.Request
/// What came back: status, headers, URL after redirects, HTTP version.
public typealias Response = FerryEngine.Response
/// Header fields in order, names compared without case.
public typealias HeaderFields = FerryCore.HeaderFields
/// Why a task failed: a ``FerryError/Code`` (URLError's codes), a message, the URL, and
/// resume data when the transfer can continue.
public typealias FerryError = FerryEngine.FerryError
/// When a failed request is tried again (``Configuration/retryPolicy``).
public typealias RetryPolicy = FerryCore.RetryPolicy
/// An upload's body: a file, `Data`, or a stream.
public typealias UploadBody = FerryEngine.UploadBody
/// Whether uploads use the IETF resumable-upload protocol (``Configuration/resumableUploads``).
public typealias ResumableUploadMode = FerryEngine.ResumableUploadMode
/// The HTTP proxies a session's requests go through (``Configuration/proxies``).
public typealias ProxySettings = FerryCore.ProxySettings
/// A `401`'s demand for credentials, and its parts (``SessionDelegate/session(_:task:didReceive:)``).
public typealias AuthenticationChallenge = FerryEngine.AuthenticationChallenge
public typealias ProtectionSpace = FerryEngine.ProtectionSpace
public typealias Credential = FerryEngine.Credential
public typealias ChallengeAnswer = FerryEngine.ChallengeAnswer
/// A question about a TLS connection (server trust, a client certificate) and its answer
/// (``SessionDelegate/session(_:didReceive:)``), the server's certificates, the client's.
public typealias ConnectionChallenge = FerryEngine.ConnectionChallenge
public typealias ConnectionChallengeAnswer = FerryEngine.ConnectionChallengeAnswer
public typealias ServerTrust = FerryEngine.ServerTrust
/// A client certificate and key in PEM or PKCS#12 files (``Configuration/clientIdentity``).
public typealias ClientIdentity = FerryCore.ClientIdentity
/// One request of a task, timed (``TaskMetrics``).
public typealias TransactionMetrics = FerryEngine.TransactionMetrics
/// How a request may use the session's cache (``Configuration/requestCachePolicy``).
public typealias CacheUse = FerryEngine.CacheUse
