//! The API extensions the run's checks rely on, as Incus's own clients decide what a server can do:
//! by the names in `api_extensions` of `GET /1.0`, never by its version number. Each is listed in the
//! report with what needs it; one the server does not advertise is an error of the run, since the
//! checks that need it would fail for that reason rather than for the core's.
//!
//! Where the Incus lines differ and no extension tells them apart, the run judges by the server's
//! answers instead (the plan's `may_cancel` of a running exec, the scenarios' `any_of` alternatives),
//! and the report lists those answers beside these.
use crate::report::ExtensionUse;

/// An API extension and what in the run needs it.
struct Needed {
    name: &'static str,
    needed_for: &'static str,
}

/// Every run needs these.
const NEEDED: &[Needed] = &[
    Needed {
        name: "instances",
        needed_for: "the /1.0/instances endpoints that every instance operation calls",
    },
    Needed {
        name: "projects",
        needed_for: "the run's own project, which keeps its instances, image and profile apart",
    },
    Needed {
        name: "etag",
        needed_for: "incus_instance_update's conditional PATCH (If-Match) and its stale-ETag 412",
    },
    Needed {
        name: "operation_wait",
        needed_for: "every wait_seconds, and the exec's observation of its command's exit \
                     (GET /1.0/operations/{id}/wait)",
    },
    Needed {
        name: "operation_description",
        needed_for: "finding the plan's running exec among the operations by its description",
    },
    Needed {
        name: "container_exec_signal_handling",
        needed_for: "SIGKILL over the exec control channel at the duration and stream-total bounds",
    },
    Needed {
        name: "container_exec_user_group_cwd",
        needed_for: "exec with user, group and cwd (scenario exec_environment_cwd_and_user)",
    },
];

/// A clustered run needs this too.
const NEEDED_CLUSTERED: Needed = Needed {
    name: "clustering",
    needed_for: "the cluster's members and each resource's location",
};

/// The extensions the run relies on, each with whether `advertised` (the server's `api_extensions`)
/// holds it.
pub(crate) fn relied_on(advertised: &[String], clustered: bool) -> Vec<ExtensionUse> {
    NEEDED
        .iter()
        .chain(clustered.then_some(&NEEDED_CLUSTERED))
        .map(|needed| ExtensionUse {
            name: needed.name.to_owned(),
            needed_for: needed.needed_for.to_owned(),
            advertised: advertised.iter().any(|name| name == needed.name),
        })
        .collect()
}

/// One error line per extension the run needs and the server does not advertise.
pub(crate) fn missing(uses: &[ExtensionUse]) -> Vec<String> {
    uses.iter()
        .filter(|used| !used.advertised)
        .map(|used| {
            format!(
                "the server does not advertise the API extension `{}`, which the run needs for {}",
                used.name, used.needed_for
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (the API extensions the run's checks rely
    //! on, as Incus's own clients decide what a server can do); a test through the runner's public
    //! API or binary goes in `tests/runner`.

    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn every_needed_extension_is_listed_with_whether_the_server_advertises_it() {
        let all: Vec<&str> = NEEDED.iter().map(|n| n.name).collect();
        let uses = relied_on(&names(&all), false);
        assert_eq!(uses.len(), NEEDED.len());
        assert!(uses.iter().all(|u| u.advertised));
        assert!(missing(&uses).is_empty());
        assert!(!uses.iter().any(|u| u.name == "clustering"));
        let clustered = relied_on(&names(&all), true);
        assert!(clustered
            .iter()
            .any(|u| u.name == "clustering" && !u.advertised));
    }

    #[test]
    fn an_extension_the_server_lacks_is_an_error_naming_what_needs_it() {
        let uses = relied_on(&names(&["instances", "projects"]), false);
        let errors = missing(&uses);
        assert_eq!(errors.len(), NEEDED.len() - 2);
        assert!(
            errors
                .iter()
                .any(|e| e.contains("`operation_wait`") && e.contains("wait_seconds")),
            "{errors:?}"
        );
    }
}
