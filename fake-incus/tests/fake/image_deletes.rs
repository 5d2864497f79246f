//! Image deletes as the daemon runs them: the image is looked up when the request comes, removed
//! in the operation; a second delete that comes while the first still runs is accepted (202), and
//! its operation fails with the daemon's `Image not found` (measured on Incus 6.0.4 with two
//! concurrent deletes); one that comes after is a 404 at once.

use crate::common::{call, wait};
use fake_incus::{assert_native_error, Fault, Rule};

#[tokio::test]
async fn a_second_image_delete_while_the_first_runs_is_accepted_and_its_operation_fails() {
    let fake = crate::common::builder().start().await.expect("fake starts");
    let images = call(&fake, "GET", "/1.0/images?recursion=1", None).await;
    let fingerprint = images.metadata()[0]["fingerprint"]
        .as_str()
        .expect("the default state has the busybox image")
        .to_owned();
    let url = format!("/1.0/images/{fingerprint}");
    let _slow = fake
        .add_rule(
            // Every delete takes as long (the daemon's take a few milliseconds).
            Rule::new("DELETE", "/1.0/images/*").fault(Fault::OperationDuration { ms: 300 }),
        )
        .expect("rule");
    let first = call(&fake, "DELETE", &url, None).await;
    let second = call(&fake, "DELETE", &url, None).await;
    assert_eq!(
        second.status(),
        202,
        "accepted while the first runs: {}",
        second.json()
    );
    let (first, second) = tokio::join!(wait(&fake, &first), wait(&fake, &second));
    assert_eq!(first.metadata()["status"], "Success", "{}", first.json());
    assert_native_error(&second, 404, "Image not found");
    assert_native_error(
        &call(&fake, "DELETE", &url, None).await,
        404,
        "Image not found",
    );
}
