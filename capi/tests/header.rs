//! `include/milsvm.h` is what cbindgen generates from `src/lib.rs` with `cbindgen.toml`: this
//! test regenerates it and fails when the checked-in header differs (with
//! `MILSVM_BLESS_HEADER=1` it writes the new header instead).

use std::path::Path;

#[test]
fn checked_in_header_is_current() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src/lib.rs"))
        .generate()
        .expect("cbindgen runs on src/lib.rs")
        .write(&mut generated);
    let generated = String::from_utf8(generated).expect("UTF-8 header");
    let path = dir.join("include/milsvm.h");
    if std::env::var_os("MILSVM_BLESS_HEADER").is_some() {
        std::fs::write(&path, &generated).expect("write the header");
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "capi/include/milsvm.h is stale: regenerate it with \
         `MILSVM_BLESS_HEADER=1 cargo test -p milsvm-capi --test header` and commit it"
    );
}
