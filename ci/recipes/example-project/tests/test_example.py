"""What a Python project's tests look like with the fake_incus fixture (the recipes' example project)."""

import pytest

from fake_incus import faults


def test_an_instance_is_created_once(fake_incus):
    created = fake_incus.api("POST", "/1.0/instances", {"name": "c1", "source": {"type": "image", "alias": "busybox"}})
    assert created.status == 202
    fake_incus.verify(method="POST", path="/1.0/instances", body={"name": "c1"}, count=1)


@pytest.mark.fake_incus(rules=[faults.rule("GET", "/1.0/instances", faults.error(500, "database is locked"))])
def test_an_error_from_incus_reaches_the_caller(fake_incus):
    answer = fake_incus.api("GET", "/1.0/instances")
    assert (answer.status, answer.json()["error"]) == (500, "database is locked")
