//! `choices!`: enums spelled by one string per variant (a kernel family, a pooling, a solver),
//! declared once wherever the enum belongs, on any floor. [`Choice`] is what the hyperparameter
//! layer reads them through, so that an enum low in the crate never names that layer.

/// An enum declared by `choices!`: one name per variant.
pub trait Choice: Sized + Copy {
    /// Every variant's name, in declaration order.
    const NAMES: &'static [&'static str];
    /// The variant named `text`, if any.
    fn from_name(text: &str) -> Option<Self>;
    /// The variant's name.
    fn as_str(&self) -> &'static str;
}

/// Declares an enum whose variants are spelled by one string each: the enum with its doc
/// comments, `Default` (the first variant), `as_str`, `from_name`, `Display`, [`Choice`] (through
/// which the hyperparameter layer reads it from a string naming a variant) and serde as that
/// string.
///
/// ```ignore
/// choices! {
///     /// Which kernel family to use.
///     pub enum KernelKind {
///         /// Gaussian kernel.
///         Rbf = "rbf",
///         /// Linear kernel.
///         Linear = "linear",
///     }
/// }
/// ```
macro_rules! choices {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $(#[$fmeta:meta])* $first:ident = $first_text:literal
            $(, $(#[$vmeta:meta])* $variant:ident = $text:literal )* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        $vis enum $name {
            $(#[$fmeta])*
            #[default]
            $first,
            $( $(#[$vmeta])* $variant ),*
        }

        impl $name {
            /// Every variant's name, in declaration order.
            pub const NAMES: &'static [&'static str] = &[$first_text, $($text),*];

            /// The variant's name.
            pub fn as_str(&self) -> &'static str {
                match self {
                    $name::$first => $first_text,
                    $( $name::$variant => $text ),*
                }
            }

            /// The variant named `text`, if any.
            pub fn from_name(text: &str) -> Option<Self> {
                match text {
                    $first_text => Some($name::$first),
                    $( $text => Some($name::$variant), )*
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl $crate::choice::Choice for $name {
            const NAMES: &'static [&'static str] = $name::NAMES;
            fn from_name(text: &str) -> Option<Self> {
                $name::from_name(text)
            }
            fn as_str(&self) -> &'static str {
                $name::as_str(self)
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
                let text = <String as serde::Deserialize>::deserialize(d)?;
                Self::from_name(&text).ok_or_else(|| {
                    serde::de::Error::custom(format!(
                        "unknown {} {text:?} (expected one of {})",
                        stringify!($name),
                        Self::NAMES.join(", ")
                    ))
                })
            }
        }
    };
}
pub(crate) use choices;
