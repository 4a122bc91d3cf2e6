//! Generates the `mammamia.v1` messages and the client stubs from the project's
//! `protos/` at build time (nothing generated is committed). The protoc that runs is
//! `$PROTOC` when set, else the one the pinned `protoc-bin-vendored` crate ships, so
//! a build needs no protoc installed.

use std::env;
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = PathBuf::from(env::var("CARGO_MANIFEST_DIR")?).join("../../protos");
    let contract = protos.join("mammamia/v1/arena.proto");
    println!("cargo:rerun-if-changed={}", contract.display());
    println!("cargo:rerun-if-env-changed=PROTOC");
    if env::var_os("PROTOC").is_none() {
        // prost-build reads the compiler's path from the environment.
        env::set_var("PROTOC", protoc_bin_vendored::protoc_bin_path()?);
    }
    // google/protobuf/timestamp.proto comes with the vendored compiler's includes.
    let well_known = protoc_bin_vendored::include_path()?;
    tonic_prost_build::configure()
        .build_server(false)
        .build_transport(false)
        .compile_protos(&[contract], &[protos, well_known])?;
    Ok(())
}
