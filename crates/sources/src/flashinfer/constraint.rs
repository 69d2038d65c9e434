//! Evaluates the axis constraints of a definition (`len_indptr == batch_size + 1`) against a
//! workload's axes. Only constraints made of axis names, integers, arithmetic and one
//! comparison can be checked from axes alone; the others (`num_kv_indices ==
//! kv_indptr[-1].item()`) need tensor data and are left to the runner.

use std::collections::HashMap;

/// The outcome of checking one constraint.
#[derive(Debug, PartialEq, Eq)]
pub enum Check {
    Holds,
    /// Both sides with their values, for the error message.
    Fails {
        left: i128,
        right: i128,
    },
    /// The constraint uses something other than axes and integers.
    NotCheckable,
}

pub fn check(constraint: &str, axes: &HashMap<String, i64>) -> Check {
    let Some(tokens) = tokenize(constraint) else { return Check::NotCheckable };
    let mut parser = Parser { tokens: &tokens, position: 0, axes };
    let Some(left) = parser.sum() else { return Check::NotCheckable };
    let Some(Token::Compare(op)) = parser.next() else { return Check::NotCheckable };
    let Some(right) = parser.sum() else { return Check::NotCheckable };
    if parser.position != tokens.len() {
        return Check::NotCheckable;
    }
    let holds = match op.as_str() {
        "==" => left == right,
        "!=" => left != right,
        "<=" => left <= right,
        ">=" => left >= right,
        "<" => left < right,
        ">" => left > right,
        _ => return Check::NotCheckable,
    };
    if holds { Check::Holds } else { Check::Fails { left, right } }
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Number(i128),
    Name(String),
    Op(char),
    FloorDiv,
    Compare(String),
    Open,
    Close,
}

fn tokenize(text: &str) -> Option<Vec<Token>> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' => i += 1,
            '0'..='9' => {
                let start = i;
                while i < chars.len() && chars[i].is_ascii_digit() {
                    i += 1;
                }
                tokens.push(Token::Number(chars[start..i].iter().collect::<String>().parse().ok()?));
            }
            c if c.is_alphabetic() || c == '_' => {
                let start = i;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                tokens.push(Token::Name(chars[start..i].iter().collect()));
            }
            '/' if chars.get(i + 1) == Some(&'/') => {
                tokens.push(Token::FloorDiv);
                i += 2;
            }
            '+' | '-' | '*' | '%' => {
                tokens.push(Token::Op(c));
                i += 1;
            }
            '(' => {
                tokens.push(Token::Open);
                i += 1;
            }
            ')' => {
                tokens.push(Token::Close);
                i += 1;
            }
            '=' | '!' | '<' | '>' => {
                let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
                if matches!(two.as_str(), "==" | "!=" | "<=" | ">=") {
                    tokens.push(Token::Compare(two));
                    i += 2;
                } else if c == '<' || c == '>' {
                    tokens.push(Token::Compare(c.to_string()));
                    i += 1;
                } else {
                    return None;
                }
            }
            // Indexing, calls, attribute access: not an axis expression.
            _ => return None,
        }
    }
    Some(tokens)
}

struct Parser<'a> {
    tokens: &'a [Token],
    position: usize,
    axes: &'a HashMap<String, i64>,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.position)
    }

    fn next(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.position).cloned();
        self.position += 1;
        token
    }

    fn sum(&mut self) -> Option<i128> {
        let mut value = self.product()?;
        while let Some(Token::Op(op @ ('+' | '-'))) = self.peek().cloned() {
            self.position += 1;
            let right = self.product()?;
            value = if op == '+' { value.checked_add(right)? } else { value.checked_sub(right)? };
        }
        Some(value)
    }

    fn product(&mut self) -> Option<i128> {
        let mut value = self.atom()?;
        loop {
            match self.peek().cloned() {
                Some(Token::Op('*')) => {
                    self.position += 1;
                    value = value.checked_mul(self.atom()?)?;
                }
                Some(Token::FloorDiv) => {
                    self.position += 1;
                    value = value.checked_div_euclid(self.atom()?)?;
                }
                Some(Token::Op('%')) => {
                    self.position += 1;
                    value = value.checked_rem_euclid(self.atom()?)?;
                }
                _ => return Some(value),
            }
        }
    }

    fn atom(&mut self) -> Option<i128> {
        match self.next()? {
            Token::Number(n) => Some(n),
            Token::Name(name) => self.axes.get(&name).map(|v| i128::from(*v)),
            Token::Op('-') => self.atom().map(|v| -v),
            Token::Open => {
                let value = self.sum()?;
                matches!(self.next()?, Token::Close).then_some(value)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axes(pairs: &[(&str, i64)]) -> HashMap<String, i64> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn checks_axis_arithmetic() {
        let a = axes(&[("len_indptr", 17), ("batch_size", 16)]);
        assert_eq!(check("len_indptr == batch_size + 1", &a), Check::Holds);
        assert_eq!(check("len_indptr == batch_size + 2", &a), Check::Fails { left: 17, right: 18 });
        assert_eq!(check("batch_size // 4 * 4 <= len_indptr", &a), Check::Holds);
        assert_eq!(check("num_kv_indices == kv_indptr[-1].item()", &a), Check::NotCheckable);
        assert_eq!(check("unknown_axis == 1", &a), Check::NotCheckable);
    }
}
