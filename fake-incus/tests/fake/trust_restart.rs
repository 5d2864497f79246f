//! A certificate added to the trust store at run time (`POST /1.0/certificates`, or a redeemed
//! trust token) is trusted again after a restart on the same `--state-dir`, as the daemon trusts
//! the certificates of its database after a restart.

use crate::common::{ClientCert, Https};
use base64::Engine;
use fake_incus::{FakeIncus, Request};
use serde_json::json;

async fn fake(state: &std::path::Path, tls: &std::path::Path) -> FakeIncus {
    FakeIncus::builder()
        .https(true)
        .tls_dir(tls)
        .state_dir(state)
        .start()
        .await
        .expect("fake starts")
}

#[tokio::test]
async fn a_certificate_trusted_at_run_time_is_trusted_after_a_restart() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (state, tls) = (dir.path().join("state"), dir.path().join("tls"));
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("key");
    let cert = rcgen::CertificateParams::new(Vec::<String>::new())
        .expect("params")
        .self_signed(&key)
        .expect("certificate");
    let own = ClientCert::Own {
        cert: cert.pem(),
        key: key.serialize_pem(),
    };
    let auth = |fake: &FakeIncus, own: ClientCert| {
        let client = Https::new(fake, own, false);
        async move { client.request("GET", "/1.0", None).await.metadata()["auth"].clone() }
    };

    let first = fake(&state, &tls).await;
    let owned = || ClientCert::Own {
        cert: cert.pem(),
        key: key.serialize_pem(),
    };
    assert_eq!(auth(&first, own).await, "untrusted");
    let body = json!({"type": "client", "name": "ci",
        "certificate": base64::engine::general_purpose::STANDARD.encode(cert.der())});
    let added = first
        .call(Request::post("/1.0/certificates").json(&body))
        .await;
    assert!(added.status() < 300, "{}", added.json());
    assert_eq!(auth(&first, owned()).await, "trusted");
    drop(first);

    let second = fake(&state, &tls).await;
    assert_eq!(
        auth(&second, owned()).await,
        "trusted",
        "the trust store came back with the state"
    );
}
