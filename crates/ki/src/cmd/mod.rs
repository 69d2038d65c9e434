pub mod catalog;
pub mod manifest;
