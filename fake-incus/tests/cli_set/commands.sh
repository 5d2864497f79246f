# The wide everyday CLI set: a few hundred `incus` commands a user types, run in order by
# `bash -c` with `incus` the client under test, INCUS_SOCKET the daemon (a real one or the fake),
# INCUS_CONF a fresh directory, $P a throw-away project and $D a scratch directory. One command
# per line; `#` starts a comment line. Its outputs (exit status, stdout, stderr), normalised by
# tests/official_client/cli_set.rs, are compared between the fake and the real daemon of a line.
# Never put here what could harm a shared host: no host paths as disk sources, no networks
# created, no NICs on a started instance; everything lives in $P (its images in the default
# project: the set edits only the image it imports, img-$P, never busybox).

## setup
incus project create $P -c features.images=false -c features.profiles=true -c features.storage.volumes=true
incus project switch $P
incus profile device add default root disk path=/ pool=default
incus project list -f csv | grep "^$P"
incus project show $P
incus project get $P features.images
incus version

## instances
incus launch busybox c1
incus init busybox c2
incus list
incus list -f csv
incus list -f csv -c nsSt
incus list c1
incus list status=running -f csv -c n
incus list -f compact
incus ls -c n -f csv
incus info c2
incus config show c2
incus config show c1 --expanded
incus config get c1 image.os
incus config get c1 volatile.base_image
incus init busybox c1
incus launch busybox c1
incus init busybox BAD_NAME
incus init busybox -- -x
incus init nope c9
incus init busybox c9 --profile nope
incus start c1
incus stop c2
incus stop c1 --force
incus start c1
incus restart c1 --force
incus pause c1
incus list -f csv -c ns
incus resume c1
incus list -f csv -c ns
incus rename c1 c1x
incus rename c2 c2x
incus rename c2x c2
incus delete c1
incus copy c2 c3
incus copy c2 c3
incus copy nope c4
incus list -f csv -c nsS
incus move c3 c4
incus list -f csv -c n
incus delete c4
incus delete c4
incus start c2
incus delete c2 --force
incus init busybox c2
incus query --project $P /1.0/instances
incus query --project $P "/1.0/instances?recursion=0"
incus query --project $P /1.0/instances/c2 | grep -c '"name": "c2"'
incus query --project $P /1.0/instances/nope
incus query --project $P -X DELETE /1.0/instances/nope
incus query --project $P /1.0/nope
incus query --project $P "/1.0/instances?filter=name+eq+c2"
incus query --project $P "/1.0/instances?filter=status+eq+Running&recursion=1" | grep '"name"'
incus query --project $P /1.0/instances/c1/state | grep -E '"(status|status_code|pid|processes)"' | sed 's/[0-9][0-9]*,/N,/'
incus query --project $P /1.0/instances/c1/state | grep -o '"[a-z_]*":' | sort -u
incus query --project $P /1.0/instances/c2/state | grep -o '"[a-z_]*":' | sort -u
incus query --project $P -X PUT /1.0/instances -d '{}'
incus query --project $P -X POST /1.0/instances -d '{"name": "c7", "source": {"type": "image", "alias": "busybox"}}' | grep -E '"(status|class)"'
incus query --project $P -X POST /1.0/instances -d '{"name": "c7", "source": {"type": "image", "alias": "busybox"}}'
incus query --project $P -X POST /1.0/instances -d '{"name": "c7", "source": {"type": "none"}}'
incus query --project $P -X POST /1.0/instances -d '{"name": "c8", "source": {"type": "nope"}}'
incus query --project $P -X POST /1.0/instances -d '{"name": "c8", "config": 5}'
incus query --project $P -X POST /1.0/instances -d 'not json'
incus delete c7 --force

## exec
incus exec c1 -- echo hello
incus exec c1 -- env | sort
incus exec c1 --env FOO=bar -- sh -c 'echo $FOO'
incus exec c1 -- sh -c 'echo out; echo err >&2; exit 3'
incus exec c1 -- sh -c 'echo kept > /tmp/f; cat /tmp/f >> /tmp/g; wc -c < /tmp/g'
incus exec c1 -- ls /nope
incus exec c1 -- ls /
incus exec c1 -- ls /bin | head -5
incus exec c1 -- cat /etc/hostname
incus exec c1 -- /usr/bin/python3 -c 'print(1)'
incus exec c1 -- sh -c '/usr/bin/python3'
incus exec c1 -- /bin/sh -c '/usr/bin/python3'
incus exec c1 -- nope-command
incus exec c1 --cwd /tmp -- pwd
incus exec c1 --cwd /nope -- pwd
incus exec c1 --user 1000 -- id -u
incus exec c1 --group 1000 --user 1000 -- id -g
incus exec c1 -- id
incus exec c1 -- sh -c 'exit 0'
incus exec c1 -- false
incus exec c1 -- true
incus exec c1 -- sh -c 'printf "a\nb\nc\n" | head -2'
incus exec c1 -T -- echo no-tty
incus exec c1 -- sh -c 'echo $HOME $USER $PATH'
incus exec c1 -- sh -c 'echo $TERM' 
printf 'from stdin\n' | incus exec c1 -- cat
printf 'x\ny\n' | incus exec c1 -- sh -c 'cat | wc -l'
incus exec c1 -- sh -c 'echo > /dev/null; echo ok'
incus exec c1 -- sh -c 'cd /nope'
incus exec c1 -- sh -c 'ls /nope; echo status=$?'
incus exec c2 -- echo stopped
incus exec nope -- echo x
incus exec c1 -- sleep 0.2
incus exec c1 -- sh -c 'yes | head -3'
incus exec c1 -- sh -c 'echo a; sleep 0.1; echo b'
incus exec c1 -- sh -c 'for i in 1 2 3; do echo $i; done'

## files
printf 'hello from the set\n' > $D/hello.txt
incus file push $D/hello.txt c1/tmp/hello.txt
incus file pull c1/tmp/hello.txt $D/pulled.txt
cat $D/pulled.txt
incus exec c1 -- cat /tmp/hello.txt
incus file pull c1/tmp/nothing $D/nothing
incus file push $D/hello.txt c1/nope/dir/hello.txt
incus file push -p $D/hello.txt c1/nope/dir/hello.txt
incus exec c1 -- ls /nope/dir
incus file push --mode 0600 $D/hello.txt c1/tmp/mode.txt
incus exec c1 -- stat -c %a /tmp/mode.txt
incus file push --uid 1000 --gid 1000 $D/hello.txt c1/tmp/owned.txt
incus exec c1 -- stat -c '%u %g' /tmp/owned.txt
incus file delete c1/tmp/hello.txt
incus file delete c1/tmp/hello.txt
incus exec c1 -- ls /tmp/hello.txt
mkdir -p $D/tree/sub && printf 'a\n' > $D/tree/a && printf 'b\n' > $D/tree/sub/b
incus file push -r $D/tree c1/tmp
incus exec c1 -- find /tmp/tree | sort
incus file pull -r c1/tmp/tree $D/back
find $D/back | sort | sed "s|$D|D|"
incus file push $D/hello.txt c2/tmp/stopped.txt
incus file pull c2/tmp/stopped.txt -
incus file pull c1/etc/hostname -
incus file pull c1/tmp -
incus file push $D/hello.txt nope/tmp/x

## config
incus config set c1 user.k=v
incus config get c1 user.k
incus config set c1 user.a=1 user.b=2
incus config show c1 | grep user.
incus config unset c1 user.k
incus config get c1 user.k
incus config unset c1 user.nope
incus config set c1 nope=1
incus config set c1 limits.cpu=abc
incus config set c1 limits.memory=lots
incus config set c1 security.privileged=maybe
incus config set c1 boot.autostart=x
incus config set c1 boot.autostart=true
incus config get c1 boot.autostart
incus config set c1 limits.cpu=1
incus config set c1 limits.memory=256MiB
incus config show c1 | grep limits
incus config unset c1 limits.cpu
incus config unset c1 limits.memory
incus config set c2 environment.FOO=bar
incus exec c1 -- sh -c 'echo ${FOO:-unset}'
incus config get c2 environment.FOO
incus config set c1 snapshots.expiry=7d
incus config get c1 snapshots.expiry
incus config show c1 | grep -v volatile | grep -v image
incus config edit c2 < /dev/null
printf 'config:\n  user.edited: "yes"\ndevices: {}\n' | incus config edit c2
incus config get c2 user.edited
printf 'config: [\n' | incus config edit c2
printf 'config:\n  nope.key: "1"\n' | incus config edit c2
incus config get c2 nope.key
incus config get nope user.k
incus config set c1 user.long="$(printf 'x%.0s' $(seq 100))"
incus config get c1 user.long | wc -c

## devices
incus config device list c1 | sort
incus config device add c1 d1 none
incus config device list c1 | sort
incus config device show c1
incus config device add c1 d1 none
incus config device add c1 a/b none
incus config device add c1 dd nope
incus config device add c1 d2 disk
incus config device add c1 d3 disk path=/mnt/x
incus config device add c1 d4 disk source=nope pool=default path=/mnt/y
incus config device get c1 d1 type
incus config device set c1 d1 user.x=1
incus config device set c1 d1 nope=1
incus config device remove c1 d1
incus config device remove c1 d1
incus config device list c1 | sort
incus config device override c1 root size=1GiB
incus config device show c1
incus config device override c1 root size=2GiB
incus config device remove c1 root
incus config device show c1
incus config device add c2 eth9 nic nictype=p2p
incus config device remove c2 eth9
incus config device add c2 u1 unix-char path=/dev/nope
incus config device remove c2 u1

## profiles
incus profile list
incus profile list -f csv
incus profile show default
incus profile create p1
incus profile create p1
incus profile create default
incus profile create "bad/name"
incus profile set p1 user.x=1
incus profile get p1 user.x
incus profile set p1 nope=1
incus profile set p1 limits.cpu=abc
incus profile unset p1 user.x
incus profile show p1
incus profile copy p1 p2
incus profile copy p1 p2
incus profile rename p2 p3
incus profile rename p3 p1
incus profile delete p3
incus profile list -f csv
incus profile add c1 p1
incus profile add c1 p1
incus profile add c1 nope
incus profile show p1
incus profile remove c1 p1
incus profile remove c1 p1
incus profile assign c1 default,p1
incus config show c1 | grep -A3 profiles
incus profile assign c1 default
incus profile device add p1 d1 none
incus profile device add p1 d1 none
incus profile device add p1 x/y none
incus profile device list p1 | sort
incus profile device show p1
incus profile device get p1 d1 type
incus profile device set p1 d1 user.a=b
incus profile device remove p1 d1
incus profile edit p1 < /dev/null
printf 'config:\n  user.e: "1"\ndescription: edited\ndevices: {}\n' | incus profile edit p1
incus profile show p1
incus query --project $P -X PUT /1.0/profiles/p1 -d '{"config": 5}'
incus query --project $P -X PUT /1.0/profiles/p1 -d '{"devices": {"x": 1}}'
incus query --project $P -X PATCH /1.0/profiles/p1 -d '{"config": {"user.p": "1"}}'
incus query --project $P /1.0/profiles/p1
incus query --project $P -X POST /1.0/profiles -d '{"name": "p1"}'
incus query --project $P -X POST /1.0/profiles -d '{"name": ""}'
incus profile delete default
incus profile delete nope
incus profile delete p1
incus profile list -f csv

## snapshots
incus snapshot create c1 s1
incus snapshot create c1 s1
incus snapshot create c1
incus snapshot list c1 -f csv -c n
incus snapshot list c1
incus snapshot show c1 s1
incus snapshot restore c1 s1
incus snapshot restore c1 nope
incus snapshot rename c1 s1 s2
incus snapshot rename c1 s2 "bad/name"
incus snapshot delete c1 s2
incus snapshot delete c1 s2
incus snapshot create c2 keep
incus copy c2/keep c5
incus list -f csv -c nsS
incus delete c5
incus info c2 | grep -A3 Snapshots
incus snapshot create c1 stateful --stateful
incus snapshot create c1 exp --expiry 2d
incus snapshot show c1 exp | grep -c expires_at
incus query --project $P /1.0/instances/c1/snapshots
incus query --project $P /1.0/instances/c1/snapshots/nope
incus snapshot delete c1 exp
incus config unset c1 snapshots.expiry

## storage
incus storage list -f csv -c nd
incus storage show default | grep -v -e used_by -e /1.0/
incus storage get default source
incus storage get default nope
incus storage show nope
incus storage info nope
incus storage volume list default -f csv -c tn
incus storage volume create default v1
incus storage volume create default v1
incus storage volume create default "bad/name"
incus storage volume create nope v1
incus storage volume create default v2 size=1GiB
incus storage volume create default v3 --type block size=10MiB
incus storage volume create default v9 nope=1
incus storage volume list default -f csv -c tnc
incus storage volume list default
incus storage volume show default v1
incus storage volume get default v1 size
incus storage volume set default v1 user.a=b
incus storage volume get default v1 user.a
incus storage volume set default v1 nope=1
incus storage volume set default v1 size=abc
incus storage volume unset default v1 user.a
incus storage volume info default v1
incus storage volume info default v2
incus storage volume info default nope
incus storage volume rename default v2 v2r
incus storage volume rename default v2r v2
incus storage volume copy default/v1 default/v1c
incus storage volume copy default/v1 default/v1c
incus storage volume delete default v1c
incus storage volume delete default v1c
incus storage volume edit default v2 < /dev/null
printf 'config:\n  user.e: "1"\ndescription: ed\n' | incus storage volume edit default v2
incus storage volume show default v2
incus storage volume attach default v1 c2 /data
incus storage volume attach default v1 c2 /data
incus config device show c2
incus storage volume show default v1 | grep -A2 used_by
incus storage volume delete default v1
incus storage volume detach default v1 c2
incus storage volume detach default v1 c2
incus storage volume show default v3
incus storage volume delete default v3

## volume snapshots
incus storage volume snapshot create default v1 vs1
incus storage volume snapshot create default v1 vs1
incus storage volume snapshot create default v1
incus storage volume snapshot list default v1 -f csv -c n
incus storage volume snapshot list default v1
incus storage volume snapshot show default v1 vs1
incus storage volume show default v1/vs1
incus storage volume snapshot rename default v1 vs1 vs2
incus storage volume snapshot restore default v1 vs2
incus storage volume snapshot restore default v1 nope
incus storage volume snapshot delete default v1 vs2
incus storage volume snapshot delete default v1 vs2
incus storage volume set default v1 snapshots.expiry=7d
incus storage volume snapshot create default v1 vexp
incus storage volume snapshot show default v1 vexp | grep expires_at | sed 's/[0-9]/N/g'
incus storage volume snapshot create default v1 vnoexp --no-expiry
incus storage volume snapshot show default v1 vnoexp | grep expires_at
incus storage volume snapshot list default v1 -f csv -c n
incus query --project $P /1.0/storage-pools/default/volumes/custom/v1/snapshots
incus query --project $P /1.0/storage-pools/default/volumes/custom/v1/snapshots/nope
incus storage volume set default v1 snapshots.expiry=nope
incus storage volume unset default v1 snapshots.expiry
incus storage volume list default -f csv -c tn

## network
incus network list -f csv | grep '^lo,'
incus network show lo
incus network info lo
incus network list-leases lo
incus network get lo nope
incus network show nope
incus network info nope
incus network set lo user.x=1
incus network delete lo
incus query --project $P /1.0/networks/lo
incus query --project $P /1.0/networks/lo/state | grep -o '"[a-z_]*":' | sort -u
incus query --project $P /1.0/networks/lo/leases
incus network acl list -f csv
incus network acl create acl-$P
incus network acl create acl-$P
incus network acl show acl-$P
incus network acl rule add acl-$P ingress action=allow
incus network acl show acl-$P
incus network acl delete acl-$P
incus network zone list -f csv

## images
mkdir -p $D/img/rootfs/etc && printf 'hi\n' > $D/img/rootfs/etc/hi
printf 'architecture: x86_64\ncreation_date: 1700000000\nproperties:\n  os: settest\n  release: "1"\n  description: set image\n' > $D/img/metadata.yaml
tar -C $D/img -czf $D/meta.tar.gz metadata.yaml && tar -C $D/img -czf $D/root.tar.gz rootfs
incus image import $D/meta.tar.gz $D/root.tar.gz --alias img-$P
incus image import $D/meta.tar.gz $D/root.tar.gz --alias img-$P
incus image list img-$P -f csv -c l
incus image list img-$P
incus image list busybox -f csv -c lpdat
incus image info img-$P | grep -v -E 'Fingerprint|Size|Created|Uploaded|Expires|Last used' | sort
incus image info busybox | grep -v -E 'Fingerprint|Size|Created|Uploaded|Expires|Last used' | sort
incus image show img-$P | grep -v -E 'fingerprint|size|_at:'
incus image show busybox | grep -v -E 'fingerprint|size|_at:'
incus image get-property img-$P description
incus image get-property img-$P nope
incus image set-property img-$P release edited
incus image get-property img-$P release
incus image show img-$P | grep -A8 properties
incus image unset-property img-$P release
incus image get-property img-$P release
printf 'auto_update: false\nproperties:\n  os: settest\n  release: edited-yaml\npublic: false\n' | incus image edit img-$P
incus image show img-$P | grep -A8 properties
incus image get-property img-$P release
incus image edit img-$P < /dev/null
incus image show img-$P | grep -A8 properties
incus image alias list img-$P -f csv -c n
incus image alias create bb2-$P img-$P
incus image alias create bb2-$P img-$P
incus image alias list bb2-$P -f csv -c n
incus image alias rename bb2-$P bb3-$P
incus image alias delete bb3-$P
incus image alias delete bb3-$P
incus image alias create nope-alias nope
incus image info nope
incus image delete nope
incus image export img-$P $D/exported
ls $D | grep -c exported
incus image export busybox $D/bb
ls $D | grep -c bb
incus query --project $P /1.0/images/aliases/img-$P | grep -o '"[a-z_]*":' | sort -u
incus query --project $P /1.0/images/aliases/busybox | grep -o '"[a-z_]*":' | sort -u
incus init img-$P c9
incus config get c9 image.release
incus delete c9
incus image delete img-$P
incus image list img-$P -f csv

## lifecycle errors
incus start nope
incus stop nope
incus stop c2
incus start c1
incus delete c1
incus rename c1 c2
incus rename c1 "bad/name"
incus copy c1 c1
incus restart c2
incus pause c2
incus resume c2
incus resume c1
incus console c2 --show-log
incus info nope
incus list nope
incus snapshot create nope s1

## order
incus init busybox a0
incus query --project $P /1.0/instances
incus query --project $P "/1.0/instances?recursion=1" | grep '"name"'
incus list -f csv -c n
incus profile show default
incus delete a0

## operations
# Completed operations stay listed 5 s (both daemons, and the fake); the set's last exec is 5 s
# back only on a machine as slow as the real daemons, so its WEBSOCKET operations are filtered out
# (the recordings hold the output of the command without the filter: TASK alone, unchanged by it).
incus operation list -f csv | cut -d, -f2 | grep -vx WEBSOCKET | sort -u
incus query --project $P /1.0/operations
incus operation show nope
incus operation delete nope
incus query --project $P /1.0/operations/00000000-0000-0000-0000-000000000000

## project
incus project info $P
incus project set $P user.x=1
incus project get $P user.x
incus project set $P nope=1
incus project set $P limits.instances=abc
incus project unset $P user.x
incus project create $P
incus project create "bad/name"
incus project show nope
incus project rename $P other-$P
incus project list -f csv | grep "^$P" | cut -d, -f1-3
incus query --project $P /1.0/projects/$P | grep -o '"[a-z_]*":' | sort -u

## cleanup
incus storage volume detach default v1 c1
incus delete c1 --force
incus delete c2 --force
incus storage volume delete default v1
incus storage volume delete default v2
incus storage volume list default -f csv -c tn
incus image delete img-$P
incus profile device remove default root
incus project switch default
incus project delete $P
