//! A member's listeners: its Unix socket and (with HTTPS) its TCP address, bound when the
//! fake starts and again when the member comes back, closed when it dies.

use crate::app::App;
use crate::cluster::Cluster;
use std::os::fd::AsFd;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

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
