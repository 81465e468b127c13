import FerryCore
import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL

/// What the engine keeps about TLS across transfers: identities read from disk, each host's
/// trust verdict, the client-certificate answers, and the callbacks AsyncHTTPClient pools
/// connections by (it tells TLS configurations apart by their callbacks' identity, so one
/// callback per host keeps that host's connections pooled together).
final class TLSState: Sendable {
    struct HostKey: Hashable {
        var handler: ObjectIdentifier?
        var host: String
        var port: Int

        /// The HTTPS host and port of `url`, for the session `handler` answers for.
        init(_ url: URL, handler: (any ConnectionChallengeHandler)?) {
            self.handler = handler.map(ObjectIdentifier.init)
            host = url.host?.lowercased() ?? ""
            port = url.port ?? 443
        }
    }

    /// A host's certificates as the session's delegate judged them.
    enum TrustDecision: Sendable {
        /// The standard rules apply.
        case standard
        /// The delegate accepted what the standard rules refused: the chain it saw becomes the
        /// only trust anchors of the host's connections (the system's store and the session's
        /// authorities are not used for it), and the host's name is still checked.
        case trustPresented([NIOSSLCertificate])
    }

    struct LoadedIdentity: Sendable {
        var chain: [NIOSSLCertificate]
        var key: NIOSSLPrivateKey
        /// The chain and key as a TLS configuration (or a handshake's override) names them.
        var certificateChain: [NIOSSLCertificateSource] { chain.map { .certificate($0) } }
        var privateKey: NIOSSLPrivateKeySource { .privateKey(key) }
    }

    /// Each identity as last read, with its files' state then: files replaced on disk (a
    /// renewed certificate) are read again.
    let identities = NIOLockedValueBox<[ClientIdentity: (stamp: [String], loaded: LoadedIdentity)]>([:])
    let trust = NIOLockedValueBox<[HostKey: Task<TrustDecision, any Error>]>([:])
    let settledTrust = NIOLockedValueBox<[HostKey: TrustDecision]>([:])
    let certificateAnswers = NIOLockedValueBox<[HostKey: Task<ConnectionChallengeAnswer, Never>]>([:])
    let certificateCallbacks = NIOLockedValueBox<[HostKey: CertificateCallback]>([:])

    /// A host's client-certificate callback, always handed out as the same closure value.
    /// NIOSSL tells TLS configurations apart by their callback's bits, and AsyncHTTPClient
    /// keeps a connection pool per configuration. A closure kept as a dictionary's value, or
    /// returned through a lock's generic result, comes back in a new wrapper each time: every
    /// request had a pool and a connection of its own, kept until the session ended.
    final class CertificateCallback: Sendable {
        let body: NIOSSLContextCallback
        init(_ body: @escaping NIOSSLContextCallback) { self.body = body }
    }

    /// Sets `configuration`'s certificate chain and key to `identity`'s.
    func present(_ identity: ClientIdentity, in configuration: inout TLSConfiguration, url: URL) throws {
        let loaded = try load(identity, url: url)
        configuration.certificateChain = loaded.certificateChain
        configuration.privateKey = loaded.privateKey
    }

    /// `identity`'s certificates and key, read again only when its files changed.
    func load(_ identity: ClientIdentity, url: URL) throws -> LoadedIdentity {
        let stamp = identity.files.map { file -> String in
            var status = stat()
            guard stat(file, &status) == 0 else { return "missing" }
            return "\(status.st_ino):\(status.st_size):\(status.st_mtim.tv_sec).\(status.st_mtim.tv_nsec)"
        }
        if let kept = identities.withLockedValue({ $0[identity] }), kept.stamp == stamp { return kept.loaded }
        let loaded: LoadedIdentity
        do {
            switch identity.source {
            case .pem(let chainFile, let keyFile):
                let chain = try NIOSSLCertificate.fromPEMFile(chainFile)
                let key = try identity.passphrase.map { passphrase in
                    try NIOSSLPrivateKey(file: keyFile, format: .pem) { (set: NIOSSLPassphraseSetter<[UInt8]>) in set(Array(passphrase.utf8)) }
                } ?? NIOSSLPrivateKey(file: keyFile, format: .pem)
                loaded = LoadedIdentity(chain: chain, key: key)
            case .pkcs12(let file):
                let bundle = try NIOSSLPKCS12Bundle(file: file, passphrase: identity.passphrase.map { Array($0.utf8) })
                loaded = LoadedIdentity(chain: bundle.certificateChain, key: bundle.privateKey)
            }
        } catch {
            throw FerryError(.secureConnectionFailed, "cannot read the \(identity): \(error)", url: url, underlying: error)
        }
        guard !loaded.chain.isEmpty else {
            throw FerryError(.secureConnectionFailed, "the \(identity) holds no certificate", url: url)
        }
        identities.withLockedValue { $0[identity] = (stamp, loaded) }
        return loaded
    }
}

/// The delegate cancelled a client-certificate challenge: the handshake fails with this.
struct ClientCertificateChallengeCancelled: Error {}

/// The delegate refused a host's certificates (kept under the task's `cancelled`).
struct TrustRefused: Error {}

extension TransferEngine {
    /// The TLS configuration of a request of `transfer` to `url`, or nil for the client's own:
    /// more trusted authorities, a client identity, a client-certificate callback asking the
    /// session's handler, the certificates its delegate accepted for the host.
    func tlsConfiguration(for url: URL, transfer: Transfer) throws -> TLSConfiguration? {
        let handler = transfer.connectionChallenges
        let key = TLSState.HostKey(url, handler: handler)
        let decision = tls.settledTrust.withLockedValue { $0[key] }
        let identity = transfer.clientIdentity ?? configuration.clientIdentity
        if transfer.additionalTrustedCertificateFiles.isEmpty, transfer.clientIdentity == nil, handler == nil, decision == nil {
            return nil
        }
        var tlsConfiguration = TLSConfiguration.makeClientConfiguration()
        if case .trustPresented(let certificates) = decision {
            // BoringSSL anchors a chain only in a self-signed certificate, so only such a one
            // of these can vouch for a connection, and only under the host's name.
            tlsConfiguration.trustRoots = .certificates(certificates)
        } else {
            tlsConfiguration.additionalTrustRoots = (configuration.additionalTrustedCertificateFiles + transfer.additionalTrustedCertificateFiles).map { .file($0) }
        }
        if let identity { try tls.present(identity, in: &tlsConfiguration, url: url) }
        if let handler {
            tlsConfiguration.sslContextCallback = certificateCallback(key: key, handler: handler, url: url)
        }
        return tlsConfiguration
    }

    /// Before `transfer`'s first request to an HTTPS host, when its session's handler
    /// evaluates server trust: shows the host's certificates to the handler, once per host.
    /// Throws when the handler refuses them. Not through a proxy (the probe connects directly).
    func evaluateServerTrust(for url: URL, transfer: Transfer, observer: any TransferObserver) async throws {
        guard url.scheme?.lowercased() == "https", let handler = transfer.connectionChallenges, handler.evaluatesServerTrust,
            transfer.proxies?.server(for: url) == nil, url.host != nil
        else { return }
        let key = TLSState.HostKey(url, handler: handler)
        let (host, port) = (key.host, key.port)
        guard tls.settledTrust.withLockedValue({ $0[key] }) == nil else { return }
        // Its client-certificate callback stays: a server that ends a handshake without one
        // gets the delegate's answer here too (kept per host, so asked once).
        let probing = try tlsConfiguration(for: url, transfer: transfer) ?? TLSConfiguration.makeClientConfiguration()
        let job = tls.trust.withLockedValue { jobs in
            if let running = jobs[key] { return running }
            let made = Task { () throws -> TLSState.TrustDecision in
                let trust = try await ServerTrustProbe.probe(url, host: host, port: port, configuration: probing)
                let space = ProtectionSpace(host: host, port: port, scheme: "https", realm: nil, method: .serverTrust)
                switch await handler.connectionDidReceive(challenge: ConnectionChallenge(protectionSpace: space, serverTrust: trust), from: observer) {
                case .performDefaultHandling, .useIdentity:
                    return .standard
                case .trustServer:
                    if trust.isTrustedByDefault { return .standard }
                    return .trustPresented(trust.certificates.compactMap { try? NIOSSLCertificate(bytes: Array($0), format: .der) })
                case .cancel, .rejectProtectionSpace:
                    // URLSession's code for a refused challenge: NSURLErrorCancelled.
                    throw FerryError(.cancelled, "the delegate refused the certificate of \(host):\(port)", url: url, underlying: TrustRefused())
                }
            }
            jobs[key] = made
            return made
        }
        do {
            let decision = try await Self.value(of: job)
            tls.settledTrust.withLockedValue { $0[key] = decision }
        } catch is CancellationError {
            throw FerryError(.cancelled, "the task was cancelled", url: url)
        } catch {
            // A refusal stands for the session; a probe that could not connect is tried again.
            if (error as? FerryError)?.underlyingError is TrustRefused == false {
                tls.trust.withLockedValue { $0[key] = nil }
            }
            throw FerryError.from(error, url: url)
        }
    }

    /// The callback that answers a server's request for a client certificate on a connection
    /// to the host of `key`: the handler is asked once per host, its answer kept.
    private func certificateCallback(key: TLSState.HostKey, handler: any ConnectionChallengeHandler, url: URL) -> NIOSSLContextCallback {
        // The box comes out of the lock, its closure after: a closure returned through the
        // lock's generic result would be wrapped anew.
        let callback = tls.certificateCallbacks.withLockedValue { callbacks in
            if let made = callbacks[key] { return made }
            let state = tls
            let made: NIOSSLContextCallback = { _, promise in
                let answer = state.certificateAnswers.withLockedValue { answers in
                    if let asked = answers[key] { return asked }
                    let space = ProtectionSpace(host: key.host, port: key.port, scheme: "https", realm: nil, method: .clientCertificate)
                    let asking = Task { await handler.connectionDidReceive(challenge: ConnectionChallenge(protectionSpace: space), from: nil) }
                    answers[key] = asking
                    return asking
                }
                Task {
                    var change = NIOSSLContextConfigurationOverride()
                    switch await answer.value {
                    case .useIdentity(let identity):
                        do {
                            let loaded = try state.load(identity, url: url)
                            change.certificateChain = loaded.certificateChain
                            change.privateKey = loaded.privateKey
                        } catch {
                            return promise.fail(error)
                        }
                    case .performDefaultHandling, .rejectProtectionSpace, .trustServer:
                        break  // the configuration holds the session's own identity, if any
                    case .cancel:
                        return promise.fail(ClientCertificateChallengeCancelled())
                    }
                    promise.succeed(change)
                }
            }
            let kept = TLSState.CertificateCallback(made)
            callbacks[key] = kept
            return kept
        }
        return callback.body
    }

    /// `job`'s value, or `CancellationError` as soon as the calling task is cancelled (the job
    /// itself goes on: other tasks to the host may wait for it).
    static func value<T: Sendable>(of job: Task<T, any Error>) async throws -> T {
        let waiting = NIOLockedValueBox<CheckedContinuation<T, any Error>?>(nil)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                waiting.withLockedValue { $0 = continuation }
                if Task.isCancelled { waiting.withLockedValue { $0.take() }?.resume(throwing: CancellationError()) }
                Task {
                    let result = await job.result
                    waiting.withLockedValue { $0.take() }?.resume(with: result)
                }
            }
        } onCancel: {
            waiting.withLockedValue { $0.take() }?.resume(throwing: CancellationError())
        }
    }
}
