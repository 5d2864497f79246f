//! A member's listeners: its Unix socket and (with HTTPS) its TCP address, bound when the
//! fake starts ([`bind_others`], then [`bring_up`] makes the cluster and serves them) and again
//! when the member comes back ([`start`]), closed when it dies.

use crate::app::App;
use crate::cluster::{Cluster, ClusterTimings, MemberInfo};
use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Where a member other than the first has its Unix socket: `<dir>/<member>/unix.socket`,
/// next to the first member's.
pub(crate) fn member_socket(first: &Path, member: &str) -> PathBuf {
    first
        .parent()
        .unwrap_or_else(|| Path::new("."))
        .join(member)
        .join("unix.socket")
}

/// Binds the listeners of every member but the first (whose are the fake's own): a Unix socket
/// next to the first's and, with HTTPS, a free port on the same IP. `Err` names the member.
pub(crate) fn bind_others(
    first_socket: &Path,
    names: &[String],
    https: Option<SocketAddr>,
) -> Result<Vec<(PathBuf, Bound)>, (String, std::io::Error)> {
    names
        .iter()
        .skip(1)
        .map(|name| {
            let path = member_socket(first_socket, name);
            let addr = https.map(|a| SocketAddr::new(a.ip(), 0));
            let bound = bind(&path, addr).map_err(|e| (name.clone(), e))?;
            Ok((path, bound))
        })
        .collect()
}

/// Makes the cluster of `names` (the first member's listeners `first`, bound on
/// `first_socket`; the others' `others`, in order), sets it on the app and serves every
/// member's listeners.
pub(crate) fn bring_up(
    app: &Arc<App>,
    names: &[String],
    (first_socket, first): (PathBuf, Bound),
    others: Vec<(PathBuf, Bound)>,
    tls: Option<Arc<rustls::ServerConfig>>,
    timings: ClusterTimings,
) -> std::io::Result<()> {
    let mut infos = Vec::new();
    let mut listeners = Vec::new();
    let bound = std::iter::once((first_socket, first)).chain(others);
    for (index, (name, (path, bound))) in names.iter().zip(bound).enumerate() {
        let https_address = bound.tcp.as_ref().map(|l| l.local_addr()).transpose()?;
        infos.push(MemberInfo {
            name: name.clone(),
            address: https_address.map_or_else(
                || crate::cluster::notional_address(index),
                |a| a.to_string(),
            ),
            unix_socket: path,
            https_address,
        });
        listeners.push(bound);
    }
    let cluster = Arc::new(Cluster::new(infos, timings, tls, &app.shutdown));
    let _ = app.cluster.set(Arc::clone(&cluster));
    for (index, bound) in listeners.into_iter().enumerate() {
        let until = cluster.life_token_at(index);
        serve(app, &cluster, index, bound, until);
    }
    Ok(())
}

/// Binds member `index`'s listeners again (it comes back) and serves them until `until` is
/// cancelled.
pub(crate) fn start(
    app: &Arc<App>,
    cluster: &Cluster,
    index: usize,
    until: CancellationToken,
) -> std::io::Result<()> {
    let Some(member) = cluster.members.get(index) else {
        return Ok(());
    };
    let bound = bind(&member.unix_socket, member.https_address)?;
    serve(app, cluster, index, bound, until);
    Ok(())
}

/// A member's bound listeners, not yet served.
pub(crate) struct Bound {
    pub(crate) unix: tokio::net::UnixListener,
    pub(crate) tcp: Option<tokio::net::TcpListener>,
}

/// Binds a member's Unix socket (creating its directory) and, for `https`, a TCP listener.
pub(crate) fn bind(
    socket: &std::path::Path,
    https: Option<std::net::SocketAddr>,
) -> std::io::Result<Bound> {
    if let Some(dir) = socket.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let unix = crate::server::unix::bind(socket)?;
    let tcp = match https {
        Some(addr) => {
            let listener = std::net::TcpListener::bind(addr)?;
            listener.set_nonblocking(true)?;
            Some(tokio::net::TcpListener::from_std(listener)?)
        }
        None => None,
    };
    Ok(Bound { unix, tcp })
}

/// Serves member `index`'s bound listeners until `until` is cancelled.
pub(crate) fn serve(
    app: &Arc<App>,
    cluster: &Cluster,
    index: usize,
    bound: Bound,
    until: CancellationToken,
) {
    let Some(member) = cluster.members.get(index) else {
        return;
    };
    let name: Arc<str> = Arc::from(member.name.as_str());
    let mut held = Vec::new();
    if let Ok(fd) = bound.unix.as_fd().try_clone_to_owned() {
        held.push(socket2::Socket::from(fd));
    }
    if let Some(fd) = bound
        .tcp
        .as_ref()
        .and_then(|l| l.as_fd().try_clone_to_owned().ok())
    {
        held.push(socket2::Socket::from(fd));
    }
    cluster.hold(index, held);
    tokio::spawn(crate::server::unix::run_as(
        Arc::clone(app),
        bound.unix,
        Some(Arc::clone(&name)),
        until.clone(),
    ));
    if let (Some(listener), Some(tls)) = (bound.tcp, &cluster.tls) {
        tokio::spawn(crate::server::https::run_as(
            Arc::clone(app),
            listener,
            Arc::clone(tls),
            Some(name),
            until,
        ));
    }
}
