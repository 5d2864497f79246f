//! Go's `encoding/base64`: the error a certificate that is not base64 gets.

/// A `CorruptInputError`'s text, at the byte where the input stopped being base64.
pub(crate) fn corrupt_input_error(error: &base64::DecodeError) -> String {
    let at = match error {
        base64::DecodeError::InvalidByte(at, _) | base64::DecodeError::InvalidLastSymbol(at, _) => {
            *at
        }
        base64::DecodeError::InvalidLength(at) => *at,
        base64::DecodeError::InvalidPadding => 0,
    };
    format!("illegal base64 data at input byte {at}")
}
