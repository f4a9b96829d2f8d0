"""From a written SOP document to a drafted SOP: reading the document, finding its outcomes and
numbers, checking a draft's soundness and coverage, and assembling the draft from model steps.

Nothing here calls a model: the drafter takes the step that fills a section as a function
(``prompts/drafting.py`` supplies the DSPy one), so this package stays in the graphs layer.
"""
