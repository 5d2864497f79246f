//! The fake cluster's model: its members, their daemons' lives (up, down, coming back),
//! placement and the timings of a member going down, as a real Incus 6.0.4 cluster shows them.
//!
//! One app holds the whole cluster's state (instances, operations, images), as the cluster's
//! database does; each member has its own listeners, labelled with its name, so every request
//! is served "through" a member. A member that is down has no listeners (its sockets refuse
//! connections, as a killed `incusd`'s do) and what lives on it answers, through the other
//! members, as the reference's member-down table says (see [`Routed`]).
//!
//! This module is the ground floor: it knows nothing of the app, the API or the listeners.
//! Binding the members' listeners and taking members down and up is done by `members`, at the
//! top beside the server; what a request belongs to ([`Scope`]) is handed down explicitly.

mod records;
mod severable;

pub(crate) use records::{config_problem, known_role, Group, Records, Want, DEFAULT_GROUP};
pub(crate) use severable::Severable;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How a real cluster's answers change with time once a member's daemon died or came back.
/// [`Default`] holds the real daemon's timings; [`ClusterTimings::fast`] those for tests.
///
/// The moments that hang on the cluster's heartbeat differ from one death to the next on a
/// real cluster; the fake draws each from its measured range ([`Span`]), per member and per
/// death, from [`ClusterTimings::seed`], so that a test can pin them
/// ([`ClusterTimings::timeline`] tells what a death draws).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClusterTimings {
    /// For this long after the death, a request forwarded to the member is still sent to it
    /// and fails at once: 500 `Get "https://ADDR/...": Unable to connect to: ADDR ([dial tcp
    /// ADDR: connect: connection refused])` (real: about 50 ms, until the cluster notices its
    /// event connection is gone).
    pub refused_window: Duration,
    /// After that and until the heartbeat round, a forwarded request (an instance GET, exec,
    /// operations, `?target=`) waits this long for the member's event connection, then
    /// answers 500 "Missing event connection with target cluster member" (real: 10 s; a
    /// request already waiting when the heartbeat round comes waits it out, measured).
    pub event_link_stall: Duration,
    /// The heartbeat round after the death, counted from it: from then on everything routed
    /// to the member answers 500 "Server isn't ready yet" at once (real: 0.5 to 11 s; three
    /// runs probed every 0.5 s turned between 4.6 and 5.1 s, between 8.9 and 9.4 s and
    /// before 0.6 s, the others between 3 and 11 s).
    pub heartbeat: Span,
    /// When the member shows `Offline` in `/1.0/cluster/members`, counted from the death
    /// (real: 5.6 to 19 s over ten runs, the last three 12.5, 15.7 and 16.8 s).
    pub offline: Span,
    /// `cluster.offline_threshold`: how long without a heartbeat an `Offline` member's message
    /// counts ("No heartbeat for 20.07s (...)"; real: 20 s). The last heartbeat it names is
    /// this long before the drawn [`offline`](Self::offline) moment.
    pub offline_threshold: Duration,
    /// After it comes back, the member is `Online` and serves routed requests again after
    /// this long, drawn per member and return (real: 1 to 20 s; three restarts: 4.5, 4.7 and
    /// 8.0 s, `Online` within 0.3 s of serving); until then routed requests answer "Server
    /// isn't ready yet".
    pub back_online: Span,
    /// After the database leader died, every request that reads the database, through any
    /// member, stalls this long after the death, until the remaining voters elected a new
    /// leader (real: about 6 s, one run); what was routed to the dead leader then answers
    /// "Server isn't ready yet".
    pub leader_election: Duration,
    /// With fewer than two of the three database voters alive (no quorum), a request that
    /// reads the database stalls this long, then answers 503 "Failed to begin transaction:
    /// failed to create cowsql connection: no available cowsql leader server found"
    /// (`/1.0/cluster/members`: 500 "context deadline exceeded" after at most 5 s). Real: 4 s
    /// to more than 25 s.
    pub no_quorum_stall: Duration,
    /// The seed the drawn moments come from (`fake-incus serve --seed`).
    pub seed: u64,
}

/// A range of durations a moment is drawn from (`min..=max`; equal bounds fix it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// The earliest.
    pub min: Duration,
    /// The latest.
    pub max: Duration,
}

impl Span {
    /// `min..=max` (swapped if given the wrong way round).
    pub fn new(min: Duration, max: Duration) -> Self {
        Self {
            min: min.min(max),
            max: max.max(min),
        }
    }

    /// Always `at`.
    pub fn fixed(at: Duration) -> Self {
        Self { min: at, max: at }
    }

    /// The point at `fraction` (0 to 1) of the way from `min` to `max`.
    fn at(self, fraction: f64) -> Duration {
        self.min + (self.max - self.min).mul_f64(fraction.clamp(0.0, 1.0))
    }
}

/// What one death (and return) of a member draws (see [`ClusterTimings::timeline`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DownTimeline {
    /// From the death to the heartbeat round ("Server isn't ready yet" from then on).
    pub heartbeat: Duration,
    /// From the death to `Offline`.
    pub offline: Duration,
    /// From the return to `Online` and serving.
    pub back_online: Duration,
}

impl Default for ClusterTimings {
    fn default() -> Self {
        let s = Duration::from_secs;
        Self {
            refused_window: Duration::from_millis(50),
            event_link_stall: s(10),
            heartbeat: Span::new(Duration::from_millis(500), s(11)),
            offline: Span::new(Duration::from_millis(5_600), s(19)),
            offline_threshold: s(20),
            back_online: Span::new(s(1), s(20)),
            leader_election: s(6),
            no_quorum_stall: s(10),
            seed: 0,
        }
    }
}

impl ClusterTimings {
    /// The same sequence in tens of milliseconds, for tests: the real timings scaled down
    /// (1 s real is 4 ms), the connection-refused window left out.
    ///
    /// ```
    /// let fast = fake_incus::ClusterTimings::fast();
    /// let first = fast.timeline(2, 0);
    /// assert!(first.heartbeat <= fast.heartbeat.max && first.heartbeat >= fast.heartbeat.min);
    /// assert_eq!(first, fast.timeline(2, 0), "the same seed draws the same");
    /// ```
    pub fn fast() -> Self {
        let real = Self::default();
        let scale = |d: Duration| d / 250;
        let span = |s: Span| Span::new(scale(s.min), scale(s.max));
        Self {
            refused_window: Duration::ZERO,
            event_link_stall: scale(real.event_link_stall),
            heartbeat: span(real.heartbeat),
            offline: span(real.offline),
            offline_threshold: scale(real.offline_threshold),
            back_online: span(real.back_online),
            leader_election: Duration::from_millis(30),
            no_quorum_stall: Duration::from_millis(60),
            seed: real.seed,
        }
    }

    /// These timings with another seed.
    #[must_use]
    pub fn with_seed(self, seed: u64) -> Self {
        Self { seed, ..self }
    }

    /// What the `death`-th death (from 0) of member `member` (its index in the cluster)
    /// draws, and its return after it.
    pub fn timeline(&self, member: usize, death: u64) -> DownTimeline {
        let draw = |span: Span, what: u64| {
            let member = u64::try_from(member).unwrap_or(u64::MAX);
            let bits = mix(mix(mix(self.seed ^ what) ^ member) ^ death);
            // The top 53 bits as a fraction in [0, 1].
            #[allow(clippy::cast_precision_loss)]
            let fraction = (bits >> 11) as f64 / ((1u64 << 53) - 1) as f64;
            span.at(fraction)
        };
        DownTimeline {
            heartbeat: draw(self.heartbeat, 1),
            offline: draw(self.offline, 2),
            back_online: draw(self.back_online, 3),
        }
    }
}

/// SplitMix64's finaliser: a well-spread hash of `x`.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One member of a fake cluster, as a client reaches it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Member {
    /// The member's name (`server_name`).
    pub name: String,
    /// Its Unix socket (for `INCUS_SOCKET`).
    pub unix_socket: PathBuf,
    /// `https://ADDR` when HTTPS is on.
    pub https_url: Option<String>,
    /// Its HTTPS address when HTTPS is on.
    pub https_address: Option<SocketAddr>,
}

/// A member as the cluster knows it.
#[derive(Debug, Clone)]
pub(crate) struct MemberInfo {
    pub(crate) name: String,
    /// `host:port`: the HTTPS address when HTTPS is on, else a loopback address of its own
    /// (`127.0.0.1N:8443`, as in the reference cluster) that nothing listens on.
    pub(crate) address: String,
    pub(crate) unix_socket: PathBuf,
    pub(crate) https_address: Option<SocketAddr>,
}

/// Where a member's daemon is in its life.
#[derive(Debug, Clone, Copy)]
enum Life {
    Up,
    Down {
        since: Instant,
        wall: SystemTime,
        /// It led the database when it died.
        leader: bool,
        /// What this death drew.
        drawn: DownTimeline,
    },
    /// Came back at `since`; `offline` if it showed Offline then.
    Returning {
        since: Instant,
        offline: bool,
        down: Instant,
        wall: SystemTime,
        drawn: DownTimeline,
    },
}

struct Runtime {
    life: Life,
    /// How many times it died (which draw the next death takes).
    deaths: u64,
    /// Cancelled when this life of the daemon ends (its listeners, connections and exec
    /// streams go with it).
    token: CancellationToken,
    /// Duplicates of its listening sockets, shut down at its death so that connections are
    /// refused from that moment (not only once the accept loops have noticed).
    listening: Vec<socket2::Socket>,
}

/// How a request routed to a member is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Routed {
    /// The member serves it.
    Serve,
    /// The member died within [`ClusterTimings::refused_window`]: the request is still sent
    /// to it and fails at once with "connection refused".
    Refused,
    /// The member died and no heartbeat round noticed yet: the request waits for its event
    /// connection until `until`, then misses it.
    Stalled { until: Instant },
    /// 500 "Server isn't ready yet" (`down`: its daemon is still dead, rather than coming
    /// back).
    NotReady { down: bool },
}

/// The database's voters (the first three members) and their leader.
#[derive(Debug, Clone, Copy)]
struct Raft {
    /// The member leading the database (`None`: no quorum).
    leader: Option<usize>,
    /// Until when the voters are electing a new leader after the leader died.
    electing_until: Option<Instant>,
}

/// How the cluster's database answers now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Database {
    /// It answers.
    Ready,
    /// The leader died: requests wait for the election until `until`.
    Electing { until: Instant },
    /// Fewer than two voters alive.
    NoQuorum,
}

/// How many members vote in the database (the first ones; the others are spares).
const VOTERS: usize = 3;

/// The members and their lives.
pub(crate) struct Cluster {
    pub(crate) members: Vec<MemberInfo>,
    pub(crate) timings: ClusterTimings,
    runtime: Mutex<Vec<Runtime>>,
    raft: Mutex<Raft>,
    /// The TLS configuration every member serves (one cluster certificate).
    pub(crate) tls: Option<std::sync::Arc<rustls::ServerConfig>>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("members", &self.members)
            .field("timings", &self.timings)
            .finish_non_exhaustive()
    }
}

impl Cluster {
    pub(crate) fn new(
        members: Vec<MemberInfo>,
        timings: ClusterTimings,
        tls: Option<std::sync::Arc<rustls::ServerConfig>>,
        shutdown: &CancellationToken,
    ) -> Self {
        let runtime = members
            .iter()
            .map(|_| Runtime {
                life: Life::Up,
                deaths: 0,
                token: shutdown.child_token(),
                listening: Vec::new(),
            })
            .collect();
        Self {
            raft: Mutex::new(Raft {
                leader: Some(0),
                electing_until: None,
            }),
            members,
            timings,
            runtime: Mutex::new(runtime),
            tls,
        }
    }

    fn runtime(&self) -> MutexGuard<'_, Vec<Runtime>> {
        self.runtime
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn raft(&self) -> MutexGuard<'_, Raft> {
        self.raft
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The member leading the database (`None`: no quorum).
    pub(crate) fn leader(&self) -> Option<usize> {
        self.raft().leader
    }

    /// Whether member `index` votes in the database.
    pub(crate) fn voter(index: usize) -> bool {
        index < VOTERS
    }

    /// How the database answers now.
    pub(crate) fn database(&self) -> Database {
        let raft = *self.raft();
        match raft {
            Raft { leader: None, .. } => Database::NoQuorum,
            Raft {
                electing_until: Some(until),
                ..
            } if Instant::now() < until => Database::Electing { until },
            _ => Database::Ready,
        }
    }

    /// After a death or a return: the leader stays while alive; otherwise the last live voter
    /// leads (the one a real election picked, one run), when at least two voters live.
    fn elect(&self, runtime: &[Runtime]) {
        let live: Vec<usize> = (0..runtime.len().min(VOTERS))
            .filter(|&i| !matches!(runtime[i].life, Life::Down { .. }))
            .collect();
        let mut raft = self.raft();
        let voters = runtime.len().min(VOTERS);
        let quorum = live.len() * 2 > voters;
        match raft.leader {
            Some(leader) if quorum && live.contains(&leader) => {}
            Some(_) if quorum => {
                raft.leader = live.last().copied();
                raft.electing_until = Some(Instant::now() + self.timings.leader_election);
            }
            _ if quorum => raft.leader = live.first().copied(),
            _ => raft.leader = None,
        }
    }

    pub(crate) fn index(&self, name: &str) -> Option<usize> {
        self.members.iter().position(|m| m.name == name)
    }

    pub(crate) fn member(&self, name: &str) -> Option<&MemberInfo> {
        self.members.iter().find(|m| m.name == name)
    }

    /// Keeps duplicates of member `index`'s listening sockets (see [`Runtime::listening`]).
    pub(crate) fn hold(&self, index: usize, sockets: Vec<socket2::Socket>) {
        if let Some(member) = self.runtime().get_mut(index) {
            member.listening = sockets;
        }
    }

    /// The token of the current life of member `index`.
    pub(crate) fn life_token_at(&self, index: usize) -> CancellationToken {
        self.runtime()
            .get(index)
            .map(|r| r.token.clone())
            .unwrap_or_default()
    }

    /// The token of the member's current life (cancelled when it dies).
    pub(crate) fn life_token(&self, name: &str) -> Option<CancellationToken> {
        let index = self.index(name)?;
        Some(self.runtime()[index].token.clone())
    }

    /// Kills the member's daemon: its listeners close and its current life token is cancelled.
    /// What this death drew; `None` when it was already down.
    pub(crate) fn kill(&self, index: usize) -> Option<DownTimeline> {
        let mut runtime = self.runtime();
        let member = runtime.get_mut(index)?;
        if matches!(member.life, Life::Down { .. }) {
            return None;
        }
        // The token first: an accept loop that sees its socket shut down finds it cancelled.
        member.token.cancel();
        for socket in member.listening.drain(..) {
            let _ = socket.shutdown(std::net::Shutdown::Both);
        }
        let leader = self.leader() == Some(index);
        let drawn = self.timings.timeline(index, member.deaths);
        member.deaths += 1;
        member.life = Life::Down {
            since: Instant::now(),
            wall: SystemTime::now(),
            leader,
            drawn,
        };
        self.elect(&runtime);
        Some(drawn)
    }

    /// Marks the member's daemon as started again with a fresh life token, returned; `None`
    /// when it was not down.
    pub(crate) fn revive(
        &self,
        index: usize,
        shutdown: &CancellationToken,
    ) -> Option<CancellationToken> {
        let mut runtime = self.runtime();
        let member = runtime.get_mut(index)?;
        let Life::Down {
            since, wall, drawn, ..
        } = member.life
        else {
            return None;
        };
        member.token = shutdown.child_token();
        member.life = Life::Returning {
            since: Instant::now(),
            offline: since.elapsed() >= drawn.offline,
            down: since,
            wall,
            drawn,
        };
        let token = member.token.clone();
        self.elect(&runtime);
        Some(token)
    }

    /// How a request routed to `name` (from another member) is answered now. Unknown names
    /// are served (the caller answers their 404).
    pub(crate) fn routed(&self, name: &str) -> Routed {
        let Some(index) = self.index(name) else {
            return Routed::Serve;
        };
        let mut runtime = self.runtime();
        let life = runtime[index].life;
        match life {
            Life::Up => Routed::Serve,
            // A dead leader is "not ready" from the end of the election on (measured).
            Life::Down { leader: true, .. } => Routed::NotReady { down: true },
            Life::Down { since, .. } if since.elapsed() < self.timings.refused_window => {
                Routed::Refused
            }
            Life::Down { since, drawn, .. } if since.elapsed() < drawn.heartbeat => {
                Routed::Stalled {
                    until: Instant::now() + self.timings.event_link_stall,
                }
            }
            Life::Down { .. } => Routed::NotReady { down: true },
            Life::Returning { since, drawn, .. } if since.elapsed() < drawn.back_online => {
                Routed::NotReady { down: false }
            }
            Life::Returning { .. } => {
                runtime[index].life = Life::Up;
                Routed::Serve
            }
        }
    }

    /// `(status, message)` of the member in `/1.0/cluster/members` (`records`: the state's).
    pub(crate) fn status(&self, name: &str, records: &Records) -> (&'static str, String) {
        let online = ("Online", "Fully operational".to_string());
        let Some(index) = self.index(name) else {
            return online;
        };
        let life = self.runtime()[index].life;
        // The last heartbeat it answered was `offline_threshold` before it shows Offline.
        let offline = |died: Instant, wall: SystemTime, drawn: DownTimeline| {
            let before = self.timings.offline_threshold.saturating_sub(drawn.offline);
            (
                "Offline",
                format!(
                    "No heartbeat for {} ({})",
                    crate::go::time::duration_string(died.elapsed() + before),
                    crate::go::time::utc_time_string(wall.checked_sub(before).unwrap_or(wall))
                ),
            )
        };
        match life {
            Life::Down {
                since, wall, drawn, ..
            } if since.elapsed() >= drawn.offline => offline(since, wall, drawn),
            Life::Returning {
                since,
                offline: true,
                down,
                wall,
                drawn,
            } if since.elapsed() < drawn.back_online => offline(down, wall, drawn),
            _ if records.evacuated(name) => {
                ("Evacuated", "Unavailable due to maintenance".to_string())
            }
            _ => online,
        }
    }

    /// Of the members `want` allows (see [`records::candidate`]) that serve, the one with the
    /// fewest instances (`count` by member name), first in order on a tie (the daemon's sort
    /// is not stable: a real tie goes either way); `None` when there is none.
    pub(crate) fn place(
        &self,
        records: &Records,
        want: &Want<'_>,
        count: impl Fn(&str) -> usize,
    ) -> Option<String> {
        self.members
            .iter()
            .filter(|m| {
                want.not != Some(m.name.as_str())
                    && records::candidate(&records.member(&m.name), want)
                    && self.routed(&m.name) == Routed::Serve
            })
            .min_by_key(|m| count(&m.name))
            .map(|m| m.name.clone())
    }

    /// The public view of every member.
    pub(crate) fn public(&self) -> Vec<Member> {
        self.members.iter().map(MemberInfo::public).collect()
    }
}

impl MemberInfo {
    /// The member in the ready line and the control socket: `{"name", "unix_socket",
    /// "https_address", "https_url", "address"}`.
    pub(crate) fn ready_json(&self) -> serde_json::Value {
        serde_json::json!({
            "name": self.name, "unix_socket": self.unix_socket,
            "https_address": self.https_address.map(|a| a.to_string()),
            "https_url": self.https_address.map(|a| format!("https://{a}")),
            "address": self.address,
        })
    }

    pub(crate) fn public(&self) -> Member {
        Member {
            name: self.name.clone(),
            unix_socket: self.unix_socket.clone(),
            https_url: self.https_address.map(|a| format!("https://{a}")),
            https_address: self.https_address,
        }
    }

    /// What a client of a forwarded request gets when this member's daemon is gone:
    /// `Get "https://ADDR/PATH": Unable to connect to: ADDR ([dial tcp ADDR: connect:
    /// connection refused])`.
    pub(crate) fn refused(&self, method: &str, path_and_query: &str) -> String {
        let mut verb = method.to_ascii_lowercase();
        if let Some(first) = verb.get_mut(0..1) {
            first.make_ascii_uppercase();
        }
        let addr = &self.address;
        format!(
            "{verb} \"https://{addr}{path_and_query}\": Unable to connect to: {addr} ([dial tcp {addr}: connect: connection refused])"
        )
    }
}

/// The address of member `index` when the fake has no HTTPS: `127.0.0.1N:8443`, as in the
/// reference cluster (nothing listens there; it only names the member in answers).
pub(crate) fn notional_address(index: usize) -> String {
    let base = u32::from(std::net::Ipv4Addr::new(127, 0, 0, 11));
    let offset = u32::try_from(index).unwrap_or(0).min(0x00ff_fff0);
    format!("{}:8443", std::net::Ipv4Addr::from(base + offset))
}

/// Fits a state to the cluster of `members`: its records are those of these members (see
/// [`Records::fit`]) and each seeded instance without a location gets one, the member with the
/// fewest instances.
pub(crate) fn place_seeded(state: &mut crate::state::State, members: &[String]) {
    state.records_mut().fit(members);
    for index in 0..state.instances.len() {
        if state.instances[index].location.is_some() {
            continue;
        }
        let count = |member: &str| {
            state
                .instances
                .iter()
                .filter(|i| i.location.as_deref() == Some(member))
                .count()
        };
        let Some(member) = members.iter().min_by_key(|m| count(m)).cloned() else {
            return;
        };
        std::sync::Arc::make_mut(&mut state.instances[index]).location = Some(member);
    }
}

/// What the request being served belongs to on a cluster, carried by the request's context
/// to whatever it starts (operations, instances, exec streams).
#[derive(Debug, Clone, Default)]
pub(crate) struct Scope {
    /// The member its effects belong to: the member of the instance or operation it concerns,
    /// the placement of an instance it creates, else the member it came through.
    pub(crate) location: Option<String>,
    /// The life of that member's daemon (what it starts there ends with it).
    pub(crate) life: Option<CancellationToken>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heartbeat_dependent_moments_are_drawn_from_the_real_ranges() {
        let real = ClusterTimings::default();
        let within = |span: Span, at: Duration| span.min <= at && at <= span.max;
        let mut heartbeats = std::collections::BTreeSet::new();
        for seed in 0..50 {
            let timings = real.with_seed(seed);
            for member in 0..3 {
                for death in 0..3 {
                    let drawn = timings.timeline(member, death);
                    assert!(within(real.heartbeat, drawn.heartbeat), "{drawn:?}");
                    assert!(within(real.offline, drawn.offline), "{drawn:?}");
                    assert!(within(real.back_online, drawn.back_online), "{drawn:?}");
                    heartbeats.insert(drawn.heartbeat);
                }
            }
        }
        assert_eq!(
            real.heartbeat,
            Span::new(Duration::from_millis(500), Duration::from_secs(11))
        );
        assert_eq!(real.offline.min, Duration::from_millis(5_600));
        assert_eq!(real.offline.max, Duration::from_secs(19));
        assert_eq!(
            real.back_online,
            Span::new(Duration::from_secs(1), Duration::from_secs(20))
        );
        assert!(
            heartbeats.len() > 400,
            "the draws spread: {}",
            heartbeats.len()
        );
        let low = heartbeats
            .iter()
            .filter(|h| **h < Duration::from_secs(7))
            .count();
        assert!(
            (150..300).contains(&low),
            "about half below the middle: {low}"
        );
    }

    #[test]
    fn a_seed_pins_every_draw_and_another_seed_changes_them() {
        let timings = ClusterTimings::default().with_seed(42);
        assert_eq!(timings.timeline(1, 0), timings.timeline(1, 0));
        assert_ne!(
            timings.timeline(1, 0),
            timings.timeline(1, 1),
            "each death draws anew"
        );
        assert_ne!(
            timings.timeline(1, 0),
            timings.timeline(2, 0),
            "each member draws its own"
        );
        assert_ne!(timings.timeline(1, 0), timings.with_seed(43).timeline(1, 0));
        let fixed = ClusterTimings {
            heartbeat: Span::fixed(Duration::from_secs(4)),
            ..timings
        };
        assert_eq!(fixed.timeline(0, 7).heartbeat, Duration::from_secs(4));
    }

    #[test]
    fn the_fast_timings_are_the_real_ones_scaled_down() {
        let (real, fast) = (ClusterTimings::default(), ClusterTimings::fast());
        assert_eq!(fast.event_link_stall, Duration::from_millis(40));
        assert_eq!(fast.heartbeat.max * 250, real.heartbeat.max);
        assert_eq!(fast.offline.min * 250, real.offline.min);
        assert_eq!(fast.back_online.max * 250, real.back_online.max);
        assert_eq!(fast.refused_window, Duration::ZERO);
    }

    #[test]
    fn the_refused_text_names_the_members_address() {
        let member = MemberInfo {
            name: "m3".into(),
            address: "127.0.0.13:8443".into(),
            unix_socket: PathBuf::new(),
            https_address: None,
        };
        assert_eq!(
            member.refused("GET", "/1.0/instances/cl-m3"),
            "Get \"https://127.0.0.13:8443/1.0/instances/cl-m3\": Unable to connect to: 127.0.0.13:8443 ([dial tcp 127.0.0.13:8443: connect: connection refused])"
        );
    }
}
