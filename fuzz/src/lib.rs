//! zkr's fuzz targets: the properties live here so that the stable CI harness
//! (`tests/fuzz_smoke.rs`) checks exactly what libFuzzer checks.

pub mod checks;
pub mod model;
