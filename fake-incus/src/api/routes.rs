//! The route table: every endpoint the fake serves, one row each, as Incus's own `api10` list
//! of endpoints is (`cmd/incusd/api_1.0.go`). A row is a path pattern, the methods it serves,
//! the API extension that introduced it (a line without the extension does not route it), an
//! optional guard and a handler; a check row states what every request below its path is
//! checked for before its endpoint answers (the request's project, an instance's name), in the
//! order the fake checks them. The declared resources (`resource/`) contribute their rows.
//! How the table is read: [`super::router`].
//!
//! Adding an endpoint: its handler in its resource's module, its row here (with the API
//! extension that brought it, when a line's endpoints differ). `API.md` and the coverage tests
//! (`tests/fake/coverage.rs`) read this table.

use super::router::{BoxFuture, Call, Pattern, Route, Table, ANY};
use super::{
    backups, bitmaps, buckets, cluster, console, debug_repair, events, exec, files, host, images,
    instances, logs, metadata, nbd, operations, power, rebuild, refusals, resource, server, sftp,
    snapshots, storage, volume_backups, volume_files, volume_rebuild, volume_snapshots, volumes,
    Ctx,
};
use crate::envelope::{self, ApiError, ApiResult};
use http::Method;
use std::sync::LazyLock;

const GET: &[&str] = &["GET"];
const PUT: &[&str] = &["PUT"];
const POST: &[&str] = &["POST"];
const PATCH: &[&str] = &["PATCH"];
const DELETE: &[&str] = &["DELETE"];
/// What a file endpoint serves (`incus file pull`, `push`, `delete`, and the stat of `HEAD`).
const FILE_METHODS: &[&str] = &["GET", "HEAD", "POST", "DELETE"];

/// The table, in the order requests walk it.
pub(crate) fn table() -> &'static Table {
    static TABLE: LazyLock<Table> = LazyLock::new(|| {
        let before = [
            SERVER,
            INSTANCES,
            VOLUMES_7_0,
            CUSTOM_VOLUMES,
            STORAGE_VOLUMES,
        ];
        let after = [IMAGES, CLUSTER, OPERATIONS];
        Table::new(
            before
                .into_iter()
                .flat_map(|rows| rows.iter().cloned())
                .chain(declared_rows())
                .chain(after.into_iter().flat_map(|rows| rows.iter().cloned())),
        )
    });
    &TABLE
}

/// The rows of the declared resources: a longer collection first, so that the resource whose
/// collection is the longest prefix of a path serves it (`/1.0/networks/{name}/forwards` is the
/// forwards', not a network's).
fn declared_rows() -> Vec<Route> {
    let mut resources: Vec<&'static dyn resource::Resource> = resource::table().to_vec();
    resources.sort_by_key(|r| std::cmp::Reverse(r.decl().collection.split('/').count()));
    resources.into_iter().flat_map(resource::routes).collect()
}

/// `501 not implemented` whatever the method.
fn not_implemented(_: &Ctx, _: &mut Call) -> ApiResult {
    Err(ApiError::not_implemented())
}

/// `404 not found` whatever the method.
fn not_found(_: &Ctx, _: &mut Call) -> ApiResult {
    Err(ApiError::not_found())
}

fn trusted(ctx: &Ctx, _: &Call) -> bool {
    ctx.trusted
}

/// The daemon's 404 when `project=` names no project, worded for storage.
fn storage_project(ctx: &Ctx, _: &Call) -> Result<(), ApiError> {
    ctx.require_project(|p| format!("Failed to load project \"{p}\": Project not found"))
}

/// The server: `/`, `/1.0` and what hangs off it directly.
const SERVER: &[Route] = &[
    Route::new("/", GET, |_, _| {
        Ok(envelope::sync(serde_json::json!(["/1.0"])))
    })
    .when("the path is `/` itself", |_, c| c.req.uri().path() == "/"),
    Route::new("/1.0", GET, |ctx, _| server::get(ctx)),
    Route::new("/1.0", PUT, |ctx, c| {
        host::update(ctx, c.headers(), c.body(), false)
    })
    .when("trusted", trusted),
    Route::new("/1.0", PATCH, |ctx, c| {
        host::update(ctx, c.headers(), c.body(), true)
    })
    .when("trusted", trusted),
    Route::new("/1.0/resources", GET, |ctx, _| host::resources(ctx)),
    Route::new("/1.0/metrics", GET, |ctx, _| Ok(host::metrics(ctx))),
    Route::new("/1.0/metadata/configuration", GET, |ctx, _| {
        Ok(envelope::sync(
            ctx.app.settings.line.configuration().clone(),
        ))
    }),
    Route::new("/1.0/network-allocations", GET, |ctx, _| {
        host::allocations(ctx)
    }),
    Route::new("/1.0/events", GET, |ctx, c| events::serve(ctx, &mut c.req)),
];

/// Instances and everything below one.
const INSTANCES: &[Route] = &[
    Route::check("/1.0/instances/{name}/**", |ctx, c| {
        ctx.require_project(|_| "Project not found".into())?;
        if c.arg(0).contains('/') {
            return Err(ApiError::bad_request("Invalid instance name"));
        }
        Ok(())
    }),
    Route::new("/1.0/instances", GET, |ctx, _| instances::list(ctx)),
    Route::new("/1.0/instances", POST, |ctx, c| {
        backups::import(ctx, c.headers(), c.body())
    })
    .when(
        "the body is a backup (`application/octet-stream`)",
        |_, c| instances::is_backup_upload(c.headers()),
    ),
    Route::new("/1.0/instances", POST, |ctx, c| {
        instances::create(ctx, c.body())
    }),
    Route::new("/1.0/instances", PUT, |ctx, c| {
        power::put_all(ctx, c.body())
    }),
    Route::new("/1.0/instances/{name}", GET, |ctx, c| {
        instances::get(ctx, c.arg(0))
    }),
    Route::new("/1.0/instances/{name}", PUT, |ctx, c| {
        instances::put(ctx, c.arg(0), c.headers(), c.body())
    }),
    Route::new("/1.0/instances/{name}", PATCH, |ctx, c| {
        instances::patch(ctx, c.arg(0), c.headers(), c.body())
    }),
    Route::new("/1.0/instances/{name}", DELETE, |ctx, c| {
        instances::delete(ctx, c.arg(0))
    }),
    Route::new("/1.0/instances/{name}", POST, |ctx, c| {
        instances::rename(ctx, c.arg(0), c.body())
    }),
    Route::new("/1.0/instances/{name}/state", GET, |ctx, c| {
        power::get(ctx, c.arg(0))
    }),
    Route::new("/1.0/instances/{name}/state", PUT, |ctx, c| {
        power::put(ctx, c.arg(0), c.body())
    }),
    Route::new("/1.0/instances/{name}/backups", GET, |ctx, c| {
        backups::list(ctx, c.arg(0))
    }),
    Route::new("/1.0/instances/{name}/backups", POST, |ctx, c| {
        backups::create(ctx, c.arg(0), c.body())
    }),
    Route::new("/1.0/instances/{name}/backups/{backup}", GET, |ctx, c| {
        backups::get(ctx, c.arg(0), c.arg(1))
    }),
    Route::new("/1.0/instances/{name}/backups/{backup}", POST, |ctx, c| {
        backups::rename(ctx, c.arg(0), c.arg(1), c.body())
    }),
    Route::new(
        "/1.0/instances/{name}/backups/{backup}",
        DELETE,
        |ctx, c| backups::delete(ctx, c.arg(0), c.arg(1)),
    ),
    Route::new(
        "/1.0/instances/{name}/backups/{backup}/export",
        GET,
        |ctx, c| backups::export(ctx, c.arg(0), c.arg(1)),
    ),
    Route::new("/1.0/instances/{name}/backups/**", ANY, not_implemented),
    Route::new("/1.0/instances/{name}/snapshots", GET, |ctx, c| {
        snapshots::list(ctx, c.arg(0))
    }),
    Route::new("/1.0/instances/{name}/snapshots", POST, |ctx, c| {
        snapshots::create(ctx, c.arg(0), c.body())
    }),
    // The snapshot's segment, decoded once by the router, is decoded again (first of all).
    Route::check("/1.0/instances/{name}/snapshots/{snapshot}", |_, c| {
        snapshots::decoded(c.arg(1)).map(drop)
    }),
    Route::new(
        "/1.0/instances/{name}/snapshots/{snapshot}",
        GET,
        |ctx, c| snapshots::get(ctx, c.arg(0), &snapshots::decoded(c.arg(1))?),
    ),
    Route::new(
        "/1.0/instances/{name}/snapshots/{snapshot}",
        DELETE,
        |ctx, c| snapshots::delete(ctx, c.arg(0), &snapshots::decoded(c.arg(1))?),
    ),
    Route::new(
        "/1.0/instances/{name}/snapshots/{snapshot}",
        POST,
        |ctx, c| snapshots::rename(ctx, c.arg(0), &snapshots::decoded(c.arg(1))?, c.body()),
    ),
    Route::new(
        "/1.0/instances/{name}/snapshots/{snapshot}",
        &["PUT", "PATCH"],
        |ctx, c| {
            let snapshot = snapshots::decoded(c.arg(1))?;
            snapshots::update(ctx, c.arg(0), &snapshot, c.headers(), c.body())
        },
    ),
    Route::new("/1.0/instances/{name}/exec", POST, |ctx, c| {
        exec::post(ctx, c.arg(0), c.body())
    }),
    Route::new("/1.0/instances/{name}/console", POST, |ctx, c| {
        console::post(ctx, c.arg(0), c.body())
    }),
    Route::new("/1.0/instances/{name}/console", GET, |ctx, c| {
        logs::console(ctx, c.arg(0))
    }),
    Route::new("/1.0/instances/{name}/console", DELETE, |ctx, c| {
        logs::clear_console(ctx, c.arg(0))
    }),
    Route::new("/1.0/instances/{name}/logs", GET, |ctx, c| {
        logs::list(ctx, c.arg(0))
    }),
    Route::new("/1.0/instances/{name}/logs/exec-output", GET, |ctx, c| {
        logs::exec_outputs(ctx, c.arg(0))
    }),
    Route::new(
        "/1.0/instances/{name}/logs/exec-output/{filename}",
        GET,
        |ctx, c| logs::exec_output(ctx, c.arg(0), c.arg(1)),
    ),
    Route::new(
        "/1.0/instances/{name}/logs/exec-output/{filename}",
        DELETE,
        |ctx, c| logs::delete_exec_output(ctx, c.arg(0), c.arg(1)),
    ),
    Route::new("/1.0/instances/{name}/logs/{filename}", GET, |ctx, c| {
        logs::file(ctx, c.arg(0), c.arg(1))
    }),
    Route::new("/1.0/instances/{name}/logs/{filename}", DELETE, |ctx, c| {
        logs::delete_file(ctx, c.arg(0), c.arg(1))
    }),
    Route::check("/1.0/instances/{name}/metadata/**", |ctx, c| {
        let state = ctx.app.state();
        super::found_instance(&state, &ctx.project(), c.arg(0)).map(drop)
    }),
    Route::new("/1.0/instances/{name}/metadata", GET, |ctx, c| {
        metadata::get(ctx, c.arg(0))
    }),
    Route::new(
        "/1.0/instances/{name}/metadata",
        &["PUT", "PATCH"],
        |ctx, c| {
            let patch = c.method() == Method::PATCH;
            metadata::put(ctx, c.arg(0), c.headers(), c.body(), patch)
        },
    ),
    // The templates' own handler answers every method (a missing `path=` before the method).
    Route::new(
        "/1.0/instances/{name}/metadata/templates",
        &["GET", "POST", "PUT", "DELETE"],
        |ctx, c| metadata::templates(ctx, c.arg(0), c.method().as_str(), c.body()),
    ),
    Route::new("/1.0/instances/{name}/metadata/templates", ANY, |ctx, c| {
        metadata::templates(ctx, c.arg(0), c.method().as_str(), c.body())
    }),
    Route::new("/1.0/instances/{name}/rebuild", POST, |ctx, c| {
        rebuild::post(ctx, c.arg(0), c.body())
    }),
    Route::new("/1.0/instances/{name}/files", FILE_METHODS, |ctx, c| {
        files::instance(ctx, c.method(), c.arg(0), c.headers(), c.body())
    }),
    Route::new("/1.0/instances/{name}/sftp", GET, |ctx, c| {
        let name = c.arg(0).to_owned();
        sftp::instance(ctx, &name, c.take_request())
    }),
    Route::new("/1.0/instances/{name}/access", GET, |_, _| {
        refusals::access()
    }),
    Route::new("/1.0/instances/{name}/nbd", GET, |ctx, c| {
        nbd::instance_nbd(ctx, c.arg(0), &c.req)
    })
    .extension(nbd::INSTANCE_EXTENSION),
    Route::new("/1.0/instances/{name}/bitmaps", POST, |ctx, c| {
        bitmaps::instance_bitmaps(ctx, c.arg(0))
    })
    .extension(bitmaps::EXTENSION),
    Route::new("/1.0/instances/{name}/debug/repair", POST, |ctx, c| {
        debug_repair::repair(ctx, c.arg(0), c.body())
    })
    .extension(debug_repair::EXTENSION),
    Route::new("/1.0/instances/{name}/debug/memory", GET, |ctx, c| {
        refusals::debug_memory(ctx, c.arg(0))
    }),
];

/// The volume of a path below `…/volumes/{type}/{volume}`: pool, type and name.
fn volume(c: &Call) -> (&str, &str, &str) {
    (c.arg(0), c.arg(1), c.arg(2))
}

/// What Incus 7.0 adds below a volume, each row with the API extension that brought it.
const VOLUMES_7_0: &[Route] = &[
    Route::new(
        "/1.0/storage-pools/{pool}/volumes/{type}/{volume}/files",
        FILE_METHODS,
        |ctx, c| volume_files::files(ctx, c.method(), volume(c), c.headers(), c.body()),
    )
    .extension(volume_files::FILES_EXTENSION),
    Route::new(
        "/1.0/storage-pools/{pool}/volumes/{type}/{volume}/sftp",
        GET,
        |ctx, c| {
            let (pool, kind, name) = volume(c);
            let (pool, kind, name) = (pool.to_owned(), kind.to_owned(), name.to_owned());
            volume_files::sftp(ctx, (&pool, &kind, &name), c.take_request())
        },
    )
    .extension(volume_files::SFTP_EXTENSION),
    Route::new(
        "/1.0/storage-pools/{pool}/volumes/{type}/{volume}/nbd",
        GET,
        |ctx, c| nbd::volume_nbd(ctx, volume(c), &c.req),
    )
    .extension(nbd::VOLUME_EXTENSION),
    Route::new(
        "/1.0/storage-pools/{pool}/volumes/{type}/{volume}/bitmaps",
        &["GET", "POST"],
        |ctx, c| bitmaps::volume_bitmaps(ctx, c.method(), volume(c), None),
    )
    .extension(bitmaps::EXTENSION),
    Route::new(
        "/1.0/storage-pools/{pool}/volumes/{type}/{volume}/bitmaps/{bitmap}",
        &["GET", "DELETE"],
        |ctx, c| bitmaps::volume_bitmaps(ctx, c.method(), volume(c), Some(c.arg(3))),
    )
    .extension(bitmaps::EXTENSION),
    Route::new(
        "/1.0/storage-pools/{pool}/volumes/{type}/{volume}/bitmaps/{bitmap}/{more}/**",
        ANY,
        not_found,
    )
    .extension(bitmaps::EXTENSION),
    Route::new(
        "/1.0/storage-pools/{pool}/volumes/{type}/{volume}/rebuild",
        POST,
        |ctx, c| volume_rebuild::rebuild(ctx, volume(c), c.body()),
    )
    .extension(volume_rebuild::EXTENSION),
];

/// What a custom volume has beyond its declaration (`volumes`): a backup import, its
/// snapshots and its backups; and a bucket's backups where a line lists them.
const CUSTOM_VOLUMES: &[Route] = &[
    Route::new(
        "/1.0/storage-pools/{pool}/volumes/custom",
        POST,
        |ctx, c| {
            storage_project(ctx, c)?;
            volume_backups::import(ctx, c.arg(0), c.headers(), c.body())
        },
    )
    .when(
        "the body is a backup (`application/octet-stream`)",
        |_, c| volume_backups::is_import(c.headers()),
    ),
    Route::new(
        "/1.0/storage-pools/{pool}/buckets/{bucket}/backups",
        GET,
        |ctx, c| buckets::listed_backups(ctx, c.arg(0)),
    )
    .when("the line lists a bucket's backups", |ctx, _| {
        ctx.app.has_extension(crate::line::BUCKET_BACKUPS_LISTED)
    }),
    Route::check(
        "/1.0/storage-pools/{pool}/volumes/custom/{volume}/snapshots/**",
        storage_project,
    ),
    Route::new(
        "/1.0/storage-pools/{pool}/volumes/custom/{volume}/snapshots",
        GET,
        |ctx, c| volume_snapshots::list(ctx, c.arg(0), c.arg(1)),
    ),
    Route::new(
        "/1.0/storage-pools/{pool}/volumes/custom/{volume}/snapshots",
        POST,
        |ctx, c| volume_snapshots::create(ctx, c.arg(0), c.arg(1), c.body()),
    ),
    Route::new(
        "/1.0/storage-pools/{pool}/volumes/custom/{volume}/snapshots/{snapshot}",
        GET,
        |ctx, c| volume_snapshots::get(ctx, c.arg(0), c.arg(1), c.arg(2)),
    ),
    Route::new(
        "/1.0/storage-pools/{pool}/volumes/custom/{volume}/snapshots/{snapshot}",
        PUT,
        |ctx, c| {
            volume_snapshots::update(
                ctx,
                c.arg(0),
                c.arg(1),
                c.arg(2),
                c.headers(),
                c.body(),
                false,
            )
        },
    ),
    Route::new(
        "/1.0/storage-pools/{pool}/volumes/custom/{volume}/snapshots/{snapshot}",
        PATCH,
        |ctx, c| {
            volume_snapshots::update(
                ctx,
                c.arg(0),
                c.arg(1),
                c.arg(2),
                c.headers(),
                c.body(),
                true,
            )
        },
    ),
    Route::new(
        "/1.0/storage-pools/{pool}/volumes/custom/{volume}/snapshots/{snapshot}",
        POST,
        |ctx, c| volume_snapshots::rename(ctx, c.arg(0), c.arg(1), c.arg(2), c.body()),
    ),
    Route::new(
        "/1.0/storage-pools/{pool}/volumes/custom/{volume}/snapshots/{snapshot}",
        DELETE,
        |ctx, c| volume_snapshots::delete(ctx, c.arg(0), c.arg(1), c.arg(2)),
    ),
    Route::check(
        "/1.0/storage-pools/{pool}/volumes/custom/{volume}/backups/**",
        storage_project,
    ),
    Route::new(
        "/1.0/storage-pools/{pool}/volumes/custom/{volume}/backups",
        GET,
        |ctx, c| volume_backups::list(ctx, c.arg(0), c.arg(1)),
    ),
    Route::new(
        "/1.0/storage-pools/{pool}/volumes/custom/{volume}/backups",
        POST,
        |ctx, c| volume_backups::create(ctx, c.arg(0), c.arg(1), c.body()),
    ),
    Route::new(
        "/1.0/storage-pools/{pool}/volumes/custom/{volume}/backups/{backup}",
        GET,
        |ctx, c| volume_backups::get(ctx, c.arg(0), c.arg(1), c.arg(2)),
    ),
    Route::new(
        "/1.0/storage-pools/{pool}/volumes/custom/{volume}/backups/{backup}",
        POST,
        |ctx, c| volume_backups::rename(ctx, c.arg(0), c.arg(1), c.arg(2), c.body()),
    ),
    Route::new(
        "/1.0/storage-pools/{pool}/volumes/custom/{volume}/backups/{backup}",
        DELETE,
        |ctx, c| volume_backups::delete(ctx, c.arg(0), c.arg(1), c.arg(2)),
    ),
    Route::new(
        "/1.0/storage-pools/{pool}/volumes/custom/{volume}/backups/{backup}/export",
        GET,
        |ctx, c| volume_backups::export(ctx, c.arg(0), c.arg(1), c.arg(2)),
    ),
    Route::new(
        "/1.0/storage-pools/{pool}/volumes/custom/{volume}/backups/**",
        ANY,
        not_implemented,
    ),
];

/// Whether a path's `{type}` is another than `custom` (a custom volume is the declared
/// resource's).
fn not_custom(_: &Ctx, c: &Call) -> bool {
    c.arg(1) != "custom"
}

/// A pool's volumes of every type but custom, read only.
const STORAGE_VOLUMES: &[Route] = &[
    Route::check("/1.0/storage-pools/{pool}/volumes", |ctx, _| {
        ctx.require_project(|_| "Project not found".into())
    }),
    Route::new("/1.0/storage-pools/{pool}/volumes", GET, |ctx, c| {
        storage::list_volumes(ctx, c.arg(0), None)
    }),
    Route::new("/1.0/storage-pools/{pool}/volumes", POST, |ctx, c| {
        volumes::create_typed(ctx, c.arg(0), c.headers(), c.body())
    }),
    Route::check("/1.0/storage-pools/{pool}/volumes/{type}", |ctx, c| {
        ctx.require_project(|_| "Project not found".into())?;
        storage::check_type(c.arg(1))
    })
    .when("the type is not `custom`", not_custom),
    Route::new("/1.0/storage-pools/{pool}/volumes/{type}", GET, |ctx, c| {
        storage::list_volumes(ctx, c.arg(0), Some(c.arg(1)))
    })
    .when("the type is not `custom`", not_custom),
    Route::new("/1.0/storage-pools/{pool}/volumes/{type}", POST, |_, c| {
        Err(ApiError::bad_request(format!(
            "Currently not allowed to create storage volumes of type \"{}\"",
            c.arg(1)
        )))
    })
    .when("the type is not `custom`", not_custom),
    Route::check(
        "/1.0/storage-pools/{pool}/volumes/{type}/{volume}/**",
        |ctx, c| {
            storage_project(ctx, c)?;
            storage::check_type(c.arg(1))
        },
    )
    .when("the type is not `custom`", not_custom),
    Route::new(
        "/1.0/storage-pools/{pool}/volumes/{type}/{volume}",
        GET,
        |ctx, c| volumes::get_volume(ctx, c.arg(0), c.arg(1), c.arg(2)),
    )
    .when("the type is not `custom`", not_custom),
    Route::new(
        "/1.0/storage-pools/{pool}/volumes/{type}/{volume}/snapshots/{snapshot}",
        GET,
        |ctx, c| {
            volumes::get_volume(
                ctx,
                c.arg(0),
                c.arg(1),
                &format!("{}/{}", c.arg(2), c.arg(3)),
            )
        },
    )
    .when("the type is not `custom`", not_custom),
    Route::new(
        "/1.0/storage-pools/{pool}/volumes/{type}/{volume}/{below}",
        ANY,
        not_implemented,
    )
    .when("the type is not `custom`", not_custom),
    Route::new(
        "/1.0/storage-pools/{pool}/volumes/{type}/{volume}/{below}/{name}",
        ANY,
        not_implemented,
    )
    .when("the type is not `custom`", not_custom),
];

/// Images and their aliases.
const IMAGES: &[Route] = &[
    // A push to another server is answered before the images' project is checked.
    Route::new("/1.0/images/{fingerprint}/export", POST, |ctx, c| {
        refusals::image_push(ctx, c.arg(0), c.body())
    })
    .when("a push (`POST`)", |_, c| c.method() == Method::POST),
    Route::check("/1.0/images/**", |ctx, c| {
        images::project_first(ctx, &c.below_1_0()[1..])
    }),
    Route::new("/1.0/images", GET, |ctx, _| images::list(ctx)),
    Route::new_async("/1.0/images", POST, create_image),
    Route::new("/1.0/images/aliases", GET, |ctx, _| {
        images::list_aliases(ctx)
    }),
    Route::new("/1.0/images/aliases", POST, |ctx, c| {
        images::create_alias(ctx, c.body())
    }),
    // The methods the aliases do not serve take `aliases` for a fingerprint.
    Route::new("/1.0/images/aliases", DELETE, |ctx, _| {
        images::delete(ctx, "aliases")
    }),
    Route::new("/1.0/images/aliases", PUT, |ctx, c| {
        images::put(ctx, "aliases", c.headers(), c.body())
    }),
    Route::new("/1.0/images/aliases", PATCH, |ctx, c| {
        images::patch(ctx, "aliases", c.headers(), c.body())
    }),
    Route::new("/1.0/images/aliases/{name}", GET, |ctx, c| {
        images::get_alias(ctx, c.arg(0))
    }),
    Route::new("/1.0/images/aliases/{name}", DELETE, |ctx, c| {
        images::delete_alias(ctx, c.arg(0))
    }),
    Route::new("/1.0/images/aliases/{name}", POST, |ctx, c| {
        images::rename_alias(ctx, c.arg(0), c.body())
    }),
    Route::new("/1.0/images/aliases/{name}", PUT, |ctx, c| {
        images::update_alias(ctx, c.arg(0), c.headers(), c.body(), false)
    }),
    Route::new("/1.0/images/aliases/{name}", PATCH, |ctx, c| {
        images::update_alias(ctx, c.arg(0), c.headers(), c.body(), true)
    }),
    Route::new("/1.0/images/{fingerprint}", GET, |ctx, c| {
        images::get(ctx, c.arg(0))
    }),
    Route::new("/1.0/images/{fingerprint}", DELETE, |ctx, c| {
        images::delete(ctx, c.arg(0))
    }),
    Route::new("/1.0/images/{fingerprint}", PUT, |ctx, c| {
        images::put(ctx, c.arg(0), c.headers(), c.body())
    }),
    Route::new("/1.0/images/{fingerprint}", PATCH, |ctx, c| {
        images::patch(ctx, c.arg(0), c.headers(), c.body())
    }),
    Route::new("/1.0/images/{fingerprint}/export", GET, |ctx, c| {
        images::export(ctx, c.arg(0))
    }),
    Route::new("/1.0/images/{fingerprint}/export", ANY, not_found),
    Route::new("/1.0/images/{fingerprint}/refresh", POST, |ctx, c| {
        images::refresh(ctx, c.arg(0))
    }),
    Route::new("/1.0/images/{fingerprint}/refresh", ANY, not_found),
    Route::new("/1.0/images/{fingerprint}/secret", POST, |ctx, c| {
        images::secret(ctx, c.arg(0))
    }),
    Route::new("/1.0/images/{fingerprint}/secret", ANY, not_found),
];

fn create_image<'a>(ctx: &'a Ctx, c: &'a mut Call) -> BoxFuture<'a, ApiResult> {
    Box::pin(images::create(ctx, c.req.headers(), c.req.body()))
}

fn standalone(ctx: &Ctx, _: &Call) -> bool {
    ctx.app.cluster().is_none()
}

fn clustered(ctx: &Ctx, _: &Call) -> bool {
    ctx.app.cluster().is_some()
}

/// The cluster: a standalone daemon's answers, then a cluster's.
const CLUSTER: &[Route] = &[
    Route::new("/1.0/cluster", GET, |ctx, _| cluster::get(ctx)).when("standalone", standalone),
    Route::new("/1.0/cluster", PUT, |ctx, c| cluster::enable(ctx, c.body()))
        .when("standalone", standalone),
    Route::new("/1.0/cluster/certificate", PUT, |_, c| {
        refusals::cluster_certificate(c.body())
    })
    .when("standalone", standalone),
    Route::new("/1.0/cluster/members", POST, |_, _| {
        Err(ApiError::bad_request("This server is not clustered"))
    })
    .when("standalone", standalone),
    Route::new("/1.0/cluster/members", ANY, |_, _| cluster::not_clustered())
        .when("standalone", standalone),
    Route::new("/1.0/cluster/members/{name}/state", ANY, |_, _| {
        Err(ApiError::new(404, "Cluster member not found"))
    })
    .when("standalone", standalone),
    Route::new("/1.0/cluster/members/{name}", POST, |_, _| {
        Err(ApiError::new(404, "Cluster member not found"))
    })
    .when("standalone", standalone),
    Route::new("/1.0/cluster/members/{name}", ANY, |_, _| {
        cluster::not_clustered()
    })
    .when("standalone", standalone),
    Route::new("/1.0/cluster/members/**", ANY, |_, _| {
        cluster::not_clustered()
    })
    .when("standalone", standalone),
    Route::new("/1.0/cluster/groups/{name}", DELETE, |_, _| {
        Err(ApiError::new(404, "Cluster_group not found"))
    })
    .when("standalone", standalone),
    Route::new("/1.0/cluster/groups/{name}", ANY, |_, _| {
        Err(ApiError::bad_request("This server is not clustered"))
    })
    .when("standalone", standalone),
    Route::new("/1.0/cluster/groups/**", ANY, |_, _| {
        Err(ApiError::bad_request("This server is not clustered"))
    })
    .when("standalone", standalone),
    Route::new("/1.0/cluster", GET, |ctx, _| cluster::get(ctx)).when("clustered", clustered),
    Route::new("/1.0/cluster", PUT, |ctx, c| cluster::enable(ctx, c.body()))
        .when("clustered", clustered),
    Route::new("/1.0/cluster/members", GET, |ctx, _| cluster::members(ctx))
        .when("clustered", clustered),
    Route::new("/1.0/cluster/members", POST, |ctx, c| {
        cluster::join_token(ctx, c.body())
    })
    .when("clustered", clustered),
    Route::check("/1.0/cluster/members/{name}", |ctx, c| {
        cluster::known_member(ctx, c.arg(0))
    })
    .when("clustered", clustered),
    Route::new("/1.0/cluster/members/{name}", GET, |ctx, c| {
        cluster::member(ctx, c.arg(0))
    })
    .when("clustered", clustered),
    Route::new(
        "/1.0/cluster/members/{name}",
        &["PUT", "PATCH"],
        |ctx, c| {
            let patch = c.method() == Method::PATCH;
            cluster::update_member(ctx, c.arg(0), c.headers(), c.body(), patch)
        },
    )
    .when("clustered", clustered),
    Route::check("/1.0/cluster/members/{name}/state", |ctx, c| {
        cluster::known_member(ctx, c.arg(0))
    })
    .when("clustered", clustered),
    Route::new("/1.0/cluster/members/{name}/state", GET, |ctx, _| {
        cluster::member_state(ctx)
    })
    .when("clustered", clustered),
    Route::new("/1.0/cluster/members/{name}/state", POST, |ctx, c| {
        cluster::evacuate(ctx, c.arg(0), c.body())
    })
    .when("clustered", clustered),
    Route::new("/1.0/cluster/groups", GET, |ctx, _| cluster::groups(ctx))
        .when("clustered", clustered),
    Route::new("/1.0/cluster/groups", POST, |ctx, c| {
        cluster::create_group(ctx, c.body())
    })
    .when("clustered", clustered),
    Route::new("/1.0/cluster/groups/{name}", GET, |ctx, c| {
        cluster::group(ctx, c.arg(0))
    })
    .when("clustered", clustered),
    Route::new("/1.0/cluster/groups/{name}", &["PUT", "PATCH"], |ctx, c| {
        let patch = c.method() == Method::PATCH;
        cluster::update_group(ctx, c.arg(0), c.body(), patch, c.headers())
    })
    .when("clustered", clustered),
    Route::new("/1.0/cluster/groups/{name}", POST, |ctx, c| {
        cluster::rename_group(ctx, c.arg(0), c.body())
    })
    .when("clustered", clustered),
    Route::new("/1.0/cluster/groups/{name}", DELETE, |ctx, c| {
        cluster::delete_group(ctx, c.arg(0))
    })
    .when("clustered", clustered),
];

/// Operations.
const OPERATIONS: &[Route] = &[
    Route::new("/1.0/operations", GET, |ctx, _| operations::list(ctx)),
    Route::new("/1.0/operations/{id}", GET, |ctx, c| {
        operations::get(ctx, c.arg(0))
    }),
    Route::new("/1.0/operations/{id}", DELETE, |ctx, c| {
        operations::cancel(ctx, c.arg(0))
    }),
    Route::new("/1.0/operations/{id}/wait", GET, |ctx, c| {
        operations::wait(ctx, c.arg(0))
    }),
    Route::new("/1.0/operations/{id}/websocket", GET, |ctx, c| {
        let id = c.arg(0).to_owned();
        operations::connect(ctx, c.take_request(), &id)
    }),
];

/// One endpoint of the table as `API.md` and the coverage tests read it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Endpoint {
    /// The method, `*` for a row that answers every method no endpoint of its path took.
    pub method: &'static str,
    /// The path pattern (`/1.0/instances/{name}/state`).
    pub path: String,
    /// The API extension that introduced it (a line without it does not route it).
    pub extension: Option<&'static str>,
    /// When it applies beyond its path and method (`standalone`, a header).
    pub when: Option<&'static str>,
}

impl Endpoint {
    /// Whether the endpoint's pattern matches a concrete path (`/1.0/instances/c1`).
    pub fn matches(&self, path: &str) -> bool {
        Pattern::parse(&self.path).matches_path(path)
    }
}

/// The table's endpoints, in table order: a row per method (checks left out).
pub(crate) fn endpoints() -> Vec<Endpoint> {
    let mut out = Vec::new();
    for row in table().rows() {
        let route = &row.route;
        if !matches!(route.step, super::router::Step::Answer(_)) {
            continue;
        }
        let methods: &[&'static str] = if route.methods.is_empty() {
            &["*"]
        } else {
            route.methods
        };
        for method in methods {
            out.push(Endpoint {
                method,
                path: route.path.to_string(),
                extension: route.extension,
                when: route.guard.map(|g| g.says),
            });
        }
    }
    out
}
