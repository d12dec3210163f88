-- A form's unique_answer (issue 17): what a registered participant's new
-- key is told when the form is full and turns people away. 'generic' (the
-- default, for forms written before the option too) decides it rejected,
-- answered capacity-reached as anyone new is, so that a full form cannot
-- be asked who is registered; 'duplicate' decides it duplicate.
ALTER TABLE capacity ADD COLUMN unique_answer TEXT NOT NULL DEFAULT 'generic';
