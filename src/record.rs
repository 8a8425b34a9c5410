//! `record!`: a fit record (the typed result of a family's fit) declared once, with its field
//! docs, on any floor. Besides the struct it declares a field-list macro, so that a layer above
//! (the Python binding) can build its own form of the record from the same declaration without
//! this crate's lower floors naming that layer.

/// Declares a fit record: the struct as written, and the field-list macro `$fields`, which
/// passes every field to a callback: `$fields!(callback! { args })` expands to
///
/// ```text
/// callback! { args Name { [doc lines] [options] field: Type, ... } }
/// ```
///
/// `options` are the tokens of the field's `#[py(...)]` attribute (empty without one): the
/// binding's per-field settings, written here so that the field list exists once; the struct
/// does not carry them. The first token of the invocation is a `$`, which the macro needs to
/// write the field-list macro's own `$` patterns (a `macro_rules!` cannot otherwise spell one).
///
/// ```ignore
/// record! { $ fields: my_fit_fields;
///     /// A fitted method.
///     #[derive(Debug, Clone, PartialEq)]
///     pub struct MyFit {
///         /// The kernel width used.
///         pub gamma: f64,
///         /// Why the loop stopped.
///         #[py(name = "converged")]
///         pub stop_reason: StopReason,
///     }
/// }
/// ```
macro_rules! record {
    (
        $d:tt fields: $fields:ident;
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[doc = $fdoc:literal])*
                $(#[py($($opt:tt)*)])?
                $fvis:vis $field:ident: $ty:ty
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $( $(#[doc = $fdoc])* $fvis $field: $ty, )*
        }

        /// The fields of the record, passed to a callback macro (see `record!`).
        #[allow(unused_macros)]
        macro_rules! $fields {
            ($d cb:ident ! { $d ($d args:tt)* }) => {
                $d cb! { $d ($d args)* $name { $( [$($fdoc)*] [$($($opt)*)?] $field: $ty, )* } }
            };
        }
        #[allow(unused_imports)]
        pub(crate) use $fields;
    };
}
pub(crate) use record;
