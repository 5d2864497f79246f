//! The endpoints Incus 7.0 adds, each served only when the fake imitates a line with the API
//! extension that brought it, with the real 7.0.2 daemon's answers (measured in a throw-away
//! project on the daemon, the same requests to a fake in 7.0 mode).

use crate::common::call;
use fake_incus::{assert_native_error, FakeIncus, IncusLine};
use serde_json::json;

async fn fake_of(line: IncusLine) -> FakeIncus {
    FakeIncus::builder()
        .incus_version(line)
        .start()
        .await
        .expect("fake starts")
}

#[tokio::test]
async fn network_address_sets_are_served_only_by_a_line_with_network_address_set() {
    let six = fake_of(IncusLine::V6_0).await;
    let unrouted = call(&six, "GET", "/1.0/network-address-sets", None).await;
    assert_native_error(&unrouted, 404, "not found");
    let seven = fake_of(IncusLine::V7_0).await;
    let empty = call(&seven, "GET", "/1.0/network-address-sets", None).await;
    assert_eq!((empty.status(), empty.metadata()), (200, &json!([])));
}

#[tokio::test]
async fn a_network_address_set_is_created_patched_used_by_an_acl_and_deleted_as_the_daemon_does() {
    let fake = fake_of(IncusLine::V7_0).await;
    let sets = "/1.0/network-address-sets";
    let body = json!({"name": "fe-as1", "addresses": ["10.0.0.1", "10.0.1.0/24", "10.0.0.120-10.0.0.130"],
                      "description": "d", "config": {"user.a": "b"}});
    let created = call(&fake, "POST", sets, Some(body.clone())).await;
    assert_eq!(created.status(), 201, "{}", created.json());
    assert_eq!(
        created.header("location"),
        Some("/1.0/network-address-sets/fe-as1")
    );
    let again = call(&fake, "POST", sets, Some(body)).await;
    assert_native_error(&again, 400, "The network address set already exists");
    let bad = call(
        &fake,
        "POST",
        sets,
        Some(
            json!({"name": "other", "addresses": ["00:11:22:33:44:55"], "config": {"bogus": "1"}}),
        ),
    )
    .await;
    assert_native_error(
        &bad,
        500,
        "Invalid addresses: Unsupported MAC address format \"00:11:22:33:44:55\" at index 0",
    );
    // PATCH merges the config only: the addresses and the description are the request's.
    let patched = call(
        &fake,
        "PATCH",
        "/1.0/network-address-sets/fe-as1",
        Some(json!({"config": {"user.c": "d"}})),
    )
    .await;
    assert_eq!(patched.status(), 200, "{}", patched.json());
    let set = call(&fake, "GET", "/1.0/network-address-sets/fe-as1", None).await;
    assert_eq!(
        set.metadata(),
        &json!({"addresses": [], "config": {"user.a": "b", "user.c": "d"}, "description": "",
                "name": "fe-as1", "used_by": [], "project": "default"})
    );
    // The daemon's ETag of the same set (measured: the name, description, addresses, config).
    assert_eq!(
        set.header("etag"),
        Some("\"d0643b7596d2a43cd7d9f7f69a9eaca4fb16a81d67f479a23baf30908e86c592\"")
    );
    let acl = json!({"name": "allow-web", "ingress": [{"action": "allow", "source": "$fe-as1", "state": "enabled"}]});
    let made = call(&fake, "POST", "/1.0/network-acls", Some(acl)).await;
    assert_eq!(made.status(), 201, "{}", made.json());
    let used = call(&fake, "GET", "/1.0/network-address-sets/fe-as1", None).await;
    assert_eq!(
        used.metadata()["used_by"],
        json!(["/1.0/network-acls/allow-web"])
    );
    let refused = call(&fake, "DELETE", "/1.0/network-address-sets/fe-as1", None).await;
    assert_native_error(&refused, 500, "Cannot delete address set that is in use");
    let renamed = call(
        &fake,
        "POST",
        "/1.0/network-address-sets/fe-as1",
        Some(json!({"name": "site"})),
    )
    .await;
    assert_native_error(&renamed, 500, "Cannot rename address set that is in use");
    call(&fake, "DELETE", "/1.0/network-acls/allow-web", None).await;
    let deleted = call(&fake, "DELETE", "/1.0/network-address-sets/fe-as1", None).await;
    assert_eq!(deleted.status(), 200, "{}", deleted.json());
    let gone = call(&fake, "GET", "/1.0/network-address-sets/fe-as1", None).await;
    assert_native_error(&gone, 404, "Network_address_set not found");
}
