/** What `String.prototype.isWellFormed` (ES2024, in Node 20) answers: no lone surrogate, so valid as UTF-8. */
export const isWellFormed = (text: string): boolean => (text as string & { isWellFormed(): boolean }).isWellFormed();
